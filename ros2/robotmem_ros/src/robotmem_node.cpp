// robotmem_ros::RobotmemNode: robotmem as an rclcpp component.
//
// Owns one robotmem::Db (in-process, no IPC to a memory service). Serves, under
// the node's name in its namespace (/<ns>/<node>/learn ...):
//   learn, recall, save_perception, forget, update, start_session, end_session
// (robotmem_msgs/srv/*), subscribes to `perception_topic` (PerceptionData; queued,
// written in batches by a timer, sequence gaps counted as lost), and publishes
// ~/status (NodeStatus, reliable + transient_local depth 1: a late subscriber gets
// the last one, i.e. latched).
//
// Callback groups: recall runs on a Reentrant group, so with a multi-threaded
// executor (component_container_mt) recalls run in parallel and never wait behind
// writes; the writing services, the perception subscription and the flush timer
// share one MutuallyExclusive group (writes are serialised by SQLite anyway);
// status publishing has its own group. The Db is thread-safe, so the groups only
// decide what may overlap.
//
// The mapping request -> Db -> response, parameter validation and the batcher
// are robotmem_ros_logic (plain C++, unit-tested without ROS); this file only wires
// them to rclcpp.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <rclcpp/rclcpp.hpp>
#include <rclcpp/version.h>
#include <rclcpp_components/register_node_macro.hpp>

#include <robotmem/robotmem.hpp>

#include "robotmem_ros/params.hpp"
#include "robotmem_ros/perception_batcher.hpp"
#include "robotmem_ros/service_logic.hpp"

namespace robotmem_ros
{

class RobotmemNode : public rclcpp::Node
{
public:
  explicit RobotmemNode(const rclcpp::NodeOptions & options)
  : rclcpp::Node("robotmem", options),
    params_(declare_params()),
    batcher_(BatcherConfig{
        static_cast<std::size_t>(params_.batch_size),
        std::chrono::milliseconds(params_.flush_interval_ms),
        static_cast<std::size_t>(params_.max_queue)})
  {
    write_group_ = create_callback_group(rclcpp::CallbackGroupType::MutuallyExclusive);
    recall_group_ = create_callback_group(rclcpp::CallbackGroupType::Reentrant);
    status_group_ = create_callback_group(rclcpp::CallbackGroupType::MutuallyExclusive);

    // Latched status: reliable, transient_local, depth 1. Never intra-process:
    // with intra-process comms on (robotmem.launch.py), rclcpp hands a message
    // only to the subscriptions in this process and skips DDS while no other
    // process subscribes, so the DDS writer's history stays empty and a
    // subscriber in another process that starts later would get nothing until
    // the next periodic republish. Through DDS the writer keeps the last status.
    rclcpp::PublisherOptions status_options;
    status_options.use_intra_process_comm = rclcpp::IntraProcessSetting::Disable;
    status_pub_ = create_publisher<msg::NodeStatus>(
      "~/status", rclcpp::QoS(1).reliable().transient_local(), status_options);

    auto db_options = open_options(params_);
    // The node's clock: simulated time under use_sim_time, else the system's.
    db_options.clock = clock_ms([clock = get_clock()] {return clock->now().nanoseconds();});
    auto opened = robotmem::Db::try_open(db_options);
    if (opened) {
      db_ = std::move(*opened);
      open_status_ = msg::StatusCode::OK;
      RCLCPP_INFO(
        get_logger(), "robotmem %s: opened '%s' (collection '%s')", robotmem::version(),
        params_.db_path.empty() ? "~/.robotmem/memory.db" : params_.db_path.c_str(), params_.collection.c_str());
    } else {
      // The node stays up and says why in its status; every service answers CLOSED.
      open_status_ = static_cast<std::int32_t>(opened.status());
      open_error_ = opened.message();
      RCLCPP_ERROR(
        get_logger(), "cannot open the robotmem database '%s': %s: %s", params_.db_path.c_str(),
        robotmem::status_name(opened.status()), open_error_.c_str());
    }

    serve<srv::Learn>("~/learn", &handle_learn, write_group_, &learned_);
    serve<srv::Recall>("~/recall", &handle_recall, recall_group_, &recalls_);
    serve<srv::SavePerception>("~/save_perception", &handle_save_perception, write_group_, &perceptions_saved_);
    serve<srv::Forget>("~/forget", &handle_forget, write_group_, nullptr);
    serve<srv::Update>("~/update", &handle_update, write_group_, nullptr);
    serve<srv::StartSession>("~/start_session", &handle_start_session, write_group_, nullptr);
    serve<srv::EndSession>("~/end_session", &handle_end_session, write_group_, nullptr);

    rclcpp::QoS qos{rclcpp::KeepLast(static_cast<std::size_t>(params_.perception_qos_depth))};
    if (best_effort(params_)) {
      qos.best_effort();
    } else {
      qos.reliable();
    }
    rclcpp::SubscriptionOptions sub_options;
    sub_options.callback_group = write_group_;
    perception_sub_ = create_subscription<msg::PerceptionData>(
      params_.perception_topic, qos,
      [this](msg::PerceptionData::UniquePtr m) {on_perception(std::move(m));}, sub_options);

    flush_timer_ = create_wall_timer(
      std::chrono::milliseconds(params_.flush_interval_ms), [this]() {flush();}, write_group_);
    status_timer_ = create_wall_timer(
      std::chrono::milliseconds(params_.status_period_ms), [this]() {publish_status();}, status_group_);

    publish_status();
    RCLCPP_INFO(
      get_logger(), "serving %s/{learn,recall,save_perception,forget,update,start_session,end_session}; "
      "perception on %s (batch %ld, every %ld ms, queue %ld, %s)",
      get_fully_qualified_name(), perception_sub_->get_topic_name(), static_cast<long>(params_.batch_size),
      static_cast<long>(params_.flush_interval_ms), static_cast<long>(params_.max_queue),
      params_.perception_qos_reliability.c_str());
  }

  ~RobotmemNode() override
  {
    // Whatever is still queued is written before the Db closes.
    const auto rest = batcher_.take_all();
    if (!rest.empty() && db_.is_open()) {
      const WriteOutcome w = write_batch(db_, batcher_, rest);
      RCLCPP_INFO(
        get_logger(), "shutdown: wrote %lu queued perception(s), %lu failed",
        static_cast<unsigned long>(w.written), static_cast<unsigned long>(w.failed));
    }
  }

private:
  NodeParams declare_params()
  {
    NodeParams d;
    auto desc = [](const std::string & text) {
        rcl_interfaces::msg::ParameterDescriptor pd;
        pd.description = text;
        pd.read_only = true;  // read once at start: changing them needs a restart
        return pd;
      };
    NodeParams p;
    p.db_path = declare_parameter<std::string>(
      "db_path", d.db_path, desc("database file; empty: ~/.robotmem/memory.db; :memory: for tests"));
    p.collection = declare_parameter<std::string>(
      "collection", d.collection, desc("collection used when a request names none"));
    p.model_dir = declare_parameter<std::string>(
      "model_dir", d.model_dir, desc("embedding model directory; empty: $ROBOTMEM_MODEL_DIR, else BM25 only"));
    p.ort_library = declare_parameter<std::string>(
      "ort_library", d.ort_library, desc("ONNX Runtime library; empty: $ROBOTMEM_ORT_LIBRARY"));
    p.embeddings = declare_parameter<bool>("embeddings", d.embeddings, desc("false: BM25 only"));
    p.durability = declare_parameter<std::string>(
      "durability", d.durability, desc("full (fsync per commit) or normal"));
    p.perception_topic = declare_parameter<std::string>(
      "perception_topic", d.perception_topic, desc("PerceptionData topic (relative: in the node's namespace)"));
    p.perception_qos_depth = declare_parameter<std::int64_t>(
      "perception_qos_depth", d.perception_qos_depth, desc("subscription history depth, 1-10000"));
    p.perception_qos_reliability = declare_parameter<std::string>(
      "perception_qos_reliability", d.perception_qos_reliability, desc("reliable or best_effort"));
    p.batch_size = declare_parameter<std::int64_t>(
      "batch_size", d.batch_size, desc("perception messages written per flush, 1-10000"));
    p.flush_interval_ms = declare_parameter<std::int64_t>(
      "flush_interval_ms", d.flush_interval_ms, desc("queued perception is written at least this often"));
    p.max_queue = declare_parameter<std::int64_t>(
      "max_queue", d.max_queue, desc("perception messages waiting at most; more are dropped and counted"));
    p.status_period_ms = declare_parameter<std::int64_t>(
      "status_period_ms", d.status_period_ms, desc("NodeStatus republish period"));
    const std::string invalid = validation_message(p);
    if (!invalid.empty()) {
      RCLCPP_FATAL(get_logger(), "invalid parameters: %s", invalid.c_str());
      throw std::invalid_argument("robotmem_ros: invalid parameters: " + invalid);
    }
    return p;
  }

  template<class ServiceT>
  using Handler = void (*)(
    const robotmem::Db &, const typename ServiceT::Request &, typename ServiceT::Response &);

  template<class ServiceT>
  void serve(
    const std::string & name, Handler<ServiceT> handler, rclcpp::CallbackGroup::SharedPtr group,
    std::atomic<std::uint64_t> * ok_counter)
  {
    auto callback = [this, handler, ok_counter](
      const std::shared_ptr<typename ServiceT::Request> request,
      std::shared_ptr<typename ServiceT::Response> response) {
        handler(db_, *request, *response);
        if (response->status == msg::StatusCode::OK) {
          if (ok_counter) {
            ok_counter->fetch_add(1, std::memory_order_relaxed);
          }
        } else {
          RCLCPP_DEBUG(
            get_logger(), "%s: %s: %s", name_of<ServiceT>(), robotmem::status_name(
              static_cast<robotmem::Status>(response->status)), response->error.c_str());
        }
      };
#if RCLCPP_VERSION_GTE(21, 0, 0)
    services_.push_back(create_service<ServiceT>(name, std::move(callback), rclcpp::ServicesQoS(), group));
#else  // Humble: the QoS is an rmw_qos_profile_t
    services_.push_back(create_service<ServiceT>(name, std::move(callback), rmw_qos_profile_services_default, group));
#endif
  }

  template<class ServiceT>
  static const char * name_of()
  {
    return rosidl_generator_traits::name<ServiceT>();
  }

  void on_perception(msg::PerceptionData::UniquePtr m)
  {
    if (!batcher_.push(std::move(*m))) {
      RCLCPP_WARN_THROTTLE(
        get_logger(), *get_clock(), 5000, "perception queue full (%ld): message dropped",
        static_cast<long>(params_.max_queue));
    }
    if (batcher_.stats().queued >= static_cast<std::uint64_t>(params_.batch_size)) {
      flush();  // same (mutually exclusive) group as the timer
    }
  }

  void flush()
  {
    bool wrote = false;
    while (batcher_.flush_due()) {
      const auto batch = batcher_.take_batch();
      if (batch.empty()) {
        break;
      }
      const WriteOutcome w = write_batch(db_, batcher_, batch);
      wrote = true;
      if (w.failed) {
        RCLCPP_WARN_THROTTLE(
          get_logger(), *get_clock(), 5000, "perception: %lu of %lu not stored: %s: %s",
          static_cast<unsigned long>(w.failed), static_cast<unsigned long>(batch.size()),
          robotmem::status_name(w.first_status), w.first_error.c_str());
      }
    }
    if (wrote) {
      publish_status();
    }
  }

  void publish_status()
  {
    msg::NodeStatus s;
    s.stamp = now();
    s.ready = db_.is_open();
    s.status = open_status_;
    s.error = open_error_;
    s.db_path = params_.db_path;
    s.collection = params_.collection;
    fill_embedding_status(db_, s);
    s.learned = learned_.load(std::memory_order_relaxed);
    s.recalls = recalls_.load(std::memory_order_relaxed);
    s.perceptions_saved = perceptions_saved_.load(std::memory_order_relaxed);
    const BatcherStats b = batcher_.stats();
    s.perception_received = b.received;
    s.perception_written = b.written;
    s.perception_failed = b.failed;
    s.perception_dropped = b.dropped;
    s.perception_lost = b.lost;
    s.perception_queued = b.queued;
    status_pub_->publish(s);
  }

  NodeParams params_;
  robotmem::Db db_;  // declared before everything whose callbacks use it
  std::int32_t open_status_ = msg::StatusCode::CLOSED;
  std::string open_error_;
  PerceptionBatcher batcher_;
  std::atomic<std::uint64_t> learned_{0};
  std::atomic<std::uint64_t> recalls_{0};
  std::atomic<std::uint64_t> perceptions_saved_{0};

  rclcpp::CallbackGroup::SharedPtr write_group_;
  rclcpp::CallbackGroup::SharedPtr recall_group_;
  rclcpp::CallbackGroup::SharedPtr status_group_;
  rclcpp::Publisher<msg::NodeStatus>::SharedPtr status_pub_;
  std::vector<rclcpp::ServiceBase::SharedPtr> services_;
  rclcpp::Subscription<msg::PerceptionData>::SharedPtr perception_sub_;
  rclcpp::TimerBase::SharedPtr flush_timer_;
  rclcpp::TimerBase::SharedPtr status_timer_;
};

}  // namespace robotmem_ros

RCLCPP_COMPONENTS_REGISTER_NODE(robotmem_ros::RobotmemNode)
