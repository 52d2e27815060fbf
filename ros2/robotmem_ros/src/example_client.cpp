// robotmem_example_client: a robot that learns from simulated grasp episodes and
// recalls before the next one.
//
// Each episode: Recall what worked ({"task.success": true}) and what failed, pick
// a grip force from that, StartSession, "grasp" (simulated: the mug holds only
// between 10 and 15 N), Learn the outcome with its context (force, success,
// object position), EndSession with the outcome score (0.0 for a failure is a
// score: has_outcome_score). Run against a robotmem node:
//   ros2 run robotmem_ros robotmem_example_client --ros-args -p memory:=/robot_a/robotmem
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <rclcpp/rclcpp.hpp>

#include "robotmem_msgs/msg/status_code.hpp"
#include "robotmem_msgs/srv/end_session.hpp"
#include "robotmem_msgs/srv/learn.hpp"
#include "robotmem_msgs/srv/recall.hpp"
#include "robotmem_msgs/srv/start_session.hpp"

using namespace std::chrono_literals;
namespace srv = robotmem_msgs::srv;
using robotmem_msgs::msg::StatusCode;

namespace
{

// Calls a service; a read (`retry_read`) is sent again when no response came in
// 2 s. Right after start-up a response can still be lost: wait_for_service sees
// the server from the client's side, but Fast DDS drops a response until the
// server has matched this client's response reader as well. Recall is safe to
// repeat; the writes are sent once (10 s), after the first recall has answered.
template<class ServiceT>
typename ServiceT::Response::SharedPtr call(
  const rclcpp::Node::SharedPtr & node, const typename rclcpp::Client<ServiceT>::SharedPtr & client,
  typename ServiceT::Request::SharedPtr request, bool retry_read = false)
{
  const int attempts = retry_read ? 5 : 1;
  const auto wait = retry_read ? std::chrono::duration_cast<std::chrono::nanoseconds>(2s) : 10s;
  typename ServiceT::Response::SharedPtr response;
  for (int i = 0; i < attempts && !response; ++i) {
    auto future = client->async_send_request(request);
    if (rclcpp::spin_until_future_complete(node, future, wait) == rclcpp::FutureReturnCode::SUCCESS) {
      response = future.get();
    } else {
      client->remove_pending_request(future);
    }
  }
  if (!response) {
    throw std::runtime_error(std::string("no response from ") + client->get_service_name());
  }
  if (response->status != StatusCode::OK) {
    throw std::runtime_error(
      std::string(client->get_service_name()) + ": status " + std::to_string(response->status) + ": " +
      response->error);
  }
  return response;
}

// "params.force.value" from a memory's params_json ({"force": {"value": 12.5, ...}}).
bool force_of(const std::string & params_json, double & force)
{
  static const std::regex re(R"re("force"\s*:\s*\{[^}]*"value"\s*:\s*(-?[0-9.]+))re");
  std::smatch m;
  if (!std::regex_search(params_json, m, re)) {
    return false;
  }
  force = std::stod(m[1].str());
  return true;
}

}  // namespace

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  auto node = std::make_shared<rclcpp::Node>("robotmem_example_client");
  const std::string memory = node->declare_parameter<std::string>("memory", "robotmem");
  const auto episodes = node->declare_parameter<std::int64_t>("episodes", 4);

  auto learn = node->create_client<srv::Learn>(memory + "/learn");
  auto recall = node->create_client<srv::Recall>(memory + "/recall");
  auto start = node->create_client<srv::StartSession>(memory + "/start_session");
  auto end = node->create_client<srv::EndSession>(memory + "/end_session");
  // Every client waits for its own service: a node's services appear one by
  // one, and a request sent before its client has matched the server is lost
  // (waiting for learn alone raced the node's start-up).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (const rclcpp::ClientBase::SharedPtr & client :
    std::vector<rclcpp::ClientBase::SharedPtr>{learn, recall, start, end})
  {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
      deadline - std::chrono::steady_clock::now());
    if (!client->wait_for_service(std::max(left, std::chrono::nanoseconds(0)))) {
      RCLCPP_ERROR(node->get_logger(), "no memory node at %s", client->get_service_name());
      rclcpp::shutdown();
      return 1;
    }
  }

  int rc = 0;
  try {
    for (std::int64_t episode = 1; episode <= episodes; ++episode) {
      // 1. Recall before acting: a force that worked, else avoid the ones that failed.
      auto rq = std::make_shared<srv::Recall::Request>();
      rq->query = "grasp mug force";
      rq->n = 10;
      rq->context_filter = R"({"task.success": true})";
      auto worked = call<srv::Recall>(node, recall, rq, true);
      double force = 20.0;  // first guess of a robot with no memory
      double f = 0.0;
      if (!worked->memories.empty() && force_of(worked->memories[0].params_json, f)) {
        force = f;
        RCLCPP_INFO(node->get_logger(), "episode %ld: memory says %.1f N worked", static_cast<long>(episode), f);
      } else {
        rq->context_filter = R"({"task.success": false})";
        auto failed = call<srv::Recall>(node, recall, rq, true);
        double lowest = force + 2.5;
        for (const auto & m : failed->memories) {
          if (force_of(m.params_json, f) && f < lowest) {
            lowest = f;
          }
        }
        force = lowest - 2.5;  // below every force that failed
        RCLCPP_INFO(
          node->get_logger(), "episode %ld: %zu failure(s) remembered, trying %.1f N", static_cast<long>(episode),
          failed->memories.size(), force);
      }

      // 2. The episode.
      auto sq = std::make_shared<srv::StartSession::Request>();
      sq->context = R"({"task": {"name": "grasp_mug"}})";
      const std::string session = call<srv::StartSession>(node, start, sq)->session_id;
      const bool success = force >= 10.0 && force <= 15.0;  // the simulated world

      // 3. Learn what happened.
      char insight[160];
      std::snprintf(
        insight, sizeof insight, "grasp of mug %s at %.1fN%s", success ? "succeeded" : "failed", force,
        success ? "" : ", it slipped");
      char context[256];
      std::snprintf(
        context, sizeof context,
        R"({"params": {"force": {"value": %.1f, "unit": "N"}}, "task": {"success": %s},)"
        R"( "spatial": {"object_position": [0.42, -0.1, 0.8]}})",
        force, success ? "true" : "false");
      auto lq = std::make_shared<srv::Learn::Request>();
      lq->insight = insight;
      lq->context = context;
      lq->session_id = session;
      lq->tags = {"grasp", "mug"};
      auto l = call<srv::Learn>(node, learn, lq);

      auto eq = std::make_shared<srv::EndSession::Request>();
      eq->session_id = session;
      eq->has_outcome_score = true;
      eq->outcome_score = success ? 1.0 : 0.0;
      auto e = call<srv::EndSession>(node, end, eq);
      RCLCPP_INFO(
        node->get_logger(), "episode %ld: %s -> memory %ld%s; session had %ld memories",
        static_cast<long>(episode), insight, static_cast<long>(l->memory_id), l->duplicate ? " (duplicate)" : "",
        static_cast<long>(e->memory_count));
    }
  } catch (const std::exception & ex) {
    RCLCPP_ERROR(node->get_logger(), "%s", ex.what());
    rc = 1;
  }
  rclcpp::shutdown();
  return rc;
}
