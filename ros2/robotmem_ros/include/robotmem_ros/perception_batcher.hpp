// robotmem_ros: the perception topic's write queue. Plain C++17, no rclcpp.
//
// The subscription callback push()es each PerceptionData message; a timer (or the
// push that fills a batch) takes up to batch_size messages with take_batch() and
// writes them with write_batch(), off the subscription's hot path. The queue is
// bounded: a message arriving while max_queue are waiting is dropped and counted.
// Sequence numbers are tracked per source_id: numbers skipped by a publisher (seq
// jumping from 4 to 7) are counted as lost messages; a seq at or below the last
// one seen from that source (a restarted publisher, or a duplicate) is counted as
// a reset and restarts the tracking there.
//
// Thread-safe: push, take_batch, flush_due and stats may be called from different
// threads (one mutex; write_batch runs without it).
#ifndef ROBOTMEM_ROS__PERCEPTION_BATCHER_HPP_
#define ROBOTMEM_ROS__PERCEPTION_BATCHER_HPP_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <robotmem/robotmem.hpp>

#include "robotmem_msgs/msg/perception_data.hpp"

namespace robotmem_ros
{

struct BatcherConfig
{
  std::size_t batch_size = 32;
  std::chrono::milliseconds flush_interval{200};
  std::size_t max_queue = 1000;
  /// Sources whose sequence numbers are tracked at most; beyond, the tracking
  /// restarts (all sources forgotten, counted in source_resets).
  std::size_t max_sources = 4096;
};

struct BatcherStats
{
  std::uint64_t received = 0;  ///< push() calls
  std::uint64_t queued = 0;    ///< waiting now
  std::uint64_t dropped = 0;   ///< rejected because the queue was full
  std::uint64_t lost = 0;      ///< sequence numbers never received
  std::uint64_t resets = 0;    ///< seq at or below the last one of its source
  std::uint64_t source_resets = 0;  ///< the source table was cleared (max_sources)
  std::uint64_t written = 0;   ///< stored (or found already stored) by write_batch
  std::uint64_t failed = 0;    ///< rejected by the library in write_batch
};

class PerceptionBatcher
{
public:
  using Clock = std::chrono::steady_clock;
  using Message = robotmem_msgs::msg::PerceptionData;

  explicit PerceptionBatcher(BatcherConfig config);

  /// Counts the message's sequence number and queues it (moved in). Returns false
  /// when it was dropped because max_queue messages are waiting.
  bool push(Message msg, Clock::time_point now = Clock::now());

  /// True when batch_size messages wait, or the oldest waiting message has waited
  /// flush_interval.
  bool flush_due(Clock::time_point now = Clock::now()) const;

  /// Removes and returns up to batch_size of the oldest waiting messages.
  std::vector<Message> take_batch();

  /// Removes and returns every waiting message (shutdown).
  std::vector<Message> take_all();

  /// Adds the outcome of a write (write_batch does it).
  void record(std::uint64_t written, std::uint64_t failed);

  BatcherStats stats() const;
  const BatcherConfig & config() const {return config_;}

private:
  struct Entry
  {
    Message msg;
    Clock::time_point at;
  };

  BatcherConfig config_;
  mutable std::mutex mutex_;
  std::deque<Entry> queue_;
  std::unordered_map<std::string, std::uint64_t> last_seq_;
  BatcherStats stats_;
};

/// Outcome of write_batch.
struct WriteOutcome
{
  std::uint64_t written = 0;
  std::uint64_t failed = 0;
  /// Status and message of the first failure (Status::Ok when none).
  robotmem::Status first_status = robotmem::Status::Ok;
  std::string first_error;
};

/// Writes each message with Db::try_save_perception (one commit each; the C API
/// has no multi-perception transaction), records the counts in `batcher`, and
/// returns them. A failing message does not stop the others.
WriteOutcome write_batch(
  const robotmem::Db & db, PerceptionBatcher & batcher,
  const std::vector<PerceptionBatcher::Message> & batch);

}  // namespace robotmem_ros

#endif  // ROBOTMEM_ROS__PERCEPTION_BATCHER_HPP_
