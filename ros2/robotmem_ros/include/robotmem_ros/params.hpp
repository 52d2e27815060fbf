// robotmem_ros: the memory node's parameters, their validation, and the
// robotmem::OpenOptions they give. Plain C++17: no rclcpp (the node declares the
// ROS parameters and fills this struct; see src/robotmem_node.cpp).
#ifndef ROBOTMEM_ROS__PARAMS_HPP_
#define ROBOTMEM_ROS__PARAMS_HPP_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <robotmem/robotmem.hpp>

namespace robotmem_ros
{

/// The node's parameters, as ROS parameter types (integers are int64 so that a
/// negative value from a YAML file can be reported rather than wrapped).
struct NodeParams
{
  /// Database file. "": the library default (~/.robotmem/memory.db); ":memory:":
  /// a private in-memory database (tests).
  std::string db_path;
  /// Collection used when a request gives none.
  std::string collection = "default";
  /// Embedding model directory. "": $ROBOTMEM_MODEL_DIR, unset too: BM25 only.
  std::string model_dir;
  /// ONNX Runtime library. "": $ROBOTMEM_ORT_LIBRARY, else next to librobotmem.
  std::string ort_library;
  /// false: BM25 only whatever the environment says.
  bool embeddings = true;
  /// "full" (fsync per commit) or "normal" (no fsync; a power cut may lose the
  /// last commits, a killed process loses nothing).
  std::string durability = "full";

  /// Perception topic (relative names resolve in the node's namespace).
  std::string perception_topic = "perception";
  /// Subscription QoS history depth, 1-10000.
  std::int64_t perception_qos_depth = 100;
  /// "reliable" or "best_effort".
  std::string perception_qos_reliability = "reliable";
  /// Messages written per flush, 1-10000 (RM_MAX_BATCH).
  std::int64_t batch_size = 32;
  /// A non-empty queue is flushed at least this often, in ms, 1-60000.
  std::int64_t flush_interval_ms = 200;
  /// Messages waiting to be written at most (beyond: dropped and counted),
  /// batch_size-1000000.
  std::int64_t max_queue = 1000;
  /// NodeStatus is republished this often (ms, 100-3600000) besides on changes.
  std::int64_t status_period_ms = 5000;
};

/// One message per invalid parameter ("batch_size: must be 1-10000, got 0");
/// empty when all are valid.
std::vector<std::string> validate(const NodeParams & p);

/// validate() joined with "; " ("" when valid).
std::string validation_message(const NodeParams & p);

/// The options robotmem::Db::open() gets for these parameters (which must be valid).
robotmem::OpenOptions open_options(const NodeParams & p);

/// OpenOptions::clock from a ROS clock's nanoseconds (the node passes its own
/// clock: system time, or simulated time under use_sim_time, so expiry, decay,
/// eviction and history follow the same time as the rest of the robot).
/// Time 0 — simulated time before the first /clock message — is no time: the
/// library reads the system clock for that call.
std::function<std::int64_t()> clock_ms(std::function<std::int64_t()> nanoseconds);

/// True for perception_qos_reliability "best_effort".
bool best_effort(const NodeParams & p);

}  // namespace robotmem_ros

#endif  // ROBOTMEM_ROS__PARAMS_HPP_
