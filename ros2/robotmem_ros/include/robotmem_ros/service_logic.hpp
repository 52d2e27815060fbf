// robotmem_ros: request -> robotmem::Db call -> response, for the seven services of
// robotmem_msgs, and the Memory / NodeStatus conversions. Plain C++17 over the
// generated robotmem_msgs C++ types and the robotmem C++ wrapper: no rclcpp, so it
// is unit-tested without a ROS graph (test/test_logic.cpp); the rclcpp node only
// forwards its service callbacks here.
//
// Every handler is noexcept with respect to the library: it uses the Db's try_*
// calls, and a failure becomes response.status (robotmem_msgs/StatusCode, the
// rm_status value) + response.error (the library's message); the other response
// fields are then left at their defaults. Handlers only read the Db handle, so any
// number of them may run at once on different threads (the Db is thread-safe).
#ifndef ROBOTMEM_ROS__SERVICE_LOGIC_HPP_
#define ROBOTMEM_ROS__SERVICE_LOGIC_HPP_

#include <robotmem/robotmem.hpp>

#include "robotmem_msgs/msg/memory.hpp"
#include "robotmem_msgs/msg/node_status.hpp"
#include "robotmem_msgs/msg/perception_data.hpp"
#include "robotmem_msgs/msg/status_code.hpp"
#include "robotmem_msgs/srv/end_session.hpp"
#include "robotmem_msgs/srv/forget.hpp"
#include "robotmem_msgs/srv/learn.hpp"
#include "robotmem_msgs/srv/recall.hpp"
#include "robotmem_msgs/srv/save_perception.hpp"
#include "robotmem_msgs/srv/start_session.hpp"
#include "robotmem_msgs/srv/update.hpp"

namespace robotmem_ros
{

namespace msg = robotmem_msgs::msg;
namespace srv = robotmem_msgs::srv;

void handle_learn(const robotmem::Db & db, const srv::Learn::Request & req, srv::Learn::Response & resp);
void handle_recall(const robotmem::Db & db, const srv::Recall::Request & req, srv::Recall::Response & resp);
void handle_save_perception(
  const robotmem::Db & db, const srv::SavePerception::Request & req, srv::SavePerception::Response & resp);
void handle_forget(const robotmem::Db & db, const srv::Forget::Request & req, srv::Forget::Response & resp);
void handle_update(const robotmem::Db & db, const srv::Update::Request & req, srv::Update::Response & resp);
void handle_start_session(
  const robotmem::Db & db, const srv::StartSession::Request & req, srv::StartSession::Response & resp);
void handle_end_session(
  const robotmem::Db & db, const srv::EndSession::Request & req, srv::EndSession::Response & resp);

/// The save_perception options for a PerceptionData message. The data is passed as
/// a view of msg.data (no copy): `msg` must outlive the call that uses the options.
robotmem::PerceptionOptions perception_options(const msg::PerceptionData & m);

/// Copies a recall hit (memory + score + distance) into a Memory message.
void to_msg(const robotmem::Hit & hit, msg::Memory & out);
/// Copies a memory (hit fields left at 0 / false).
void to_msg(const robotmem::Memory & m, msg::Memory & out);

/// Fills the embedding fields of a NodeStatus from Db::embedding_status(); on a
/// closed or failing Db: EMBED_UNAVAILABLE with the error as the reason.
void fill_embedding_status(const robotmem::Db & db, msg::NodeStatus & out);

}  // namespace robotmem_ros

#endif  // ROBOTMEM_ROS__SERVICE_LOGIC_HPP_
