#include "robotmem_ros/perception_batcher.hpp"

#include <algorithm>
#include <utility>

#include "robotmem_ros/service_logic.hpp"

namespace robotmem_ros
{

PerceptionBatcher::PerceptionBatcher(BatcherConfig config)
: config_(config)
{
  config_.batch_size = std::max<std::size_t>(config_.batch_size, 1);
  config_.max_queue = std::max(config_.max_queue, config_.batch_size);
  config_.max_sources = std::max<std::size_t>(config_.max_sources, 1);
}

bool PerceptionBatcher::push(Message msg, Clock::time_point now)
{
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.received;
  auto it = last_seq_.find(msg.source_id);
  if (it == last_seq_.end()) {
    if (last_seq_.size() >= config_.max_sources) {
      last_seq_.clear();
      ++stats_.source_resets;
    }
    last_seq_.emplace(msg.source_id, msg.seq);
  } else {
    if (msg.seq > it->second) {
      stats_.lost += msg.seq - it->second - 1;
    } else {
      ++stats_.resets;
    }
    it->second = msg.seq;
  }
  if (queue_.size() >= config_.max_queue) {
    ++stats_.dropped;
    return false;
  }
  queue_.push_back(Entry{std::move(msg), now});
  return true;
}

bool PerceptionBatcher::flush_due(Clock::time_point now) const
{
  std::lock_guard<std::mutex> lock(mutex_);
  if (queue_.empty()) {
    return false;
  }
  return queue_.size() >= config_.batch_size || now - queue_.front().at >= config_.flush_interval;
}

std::vector<PerceptionBatcher::Message> PerceptionBatcher::take_batch()
{
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t n = std::min(queue_.size(), config_.batch_size);
  std::vector<Message> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(std::move(queue_.front().msg));
    queue_.pop_front();
  }
  return out;
}

std::vector<PerceptionBatcher::Message> PerceptionBatcher::take_all()
{
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Message> out;
  out.reserve(queue_.size());
  for (Entry & e : queue_) {
    out.push_back(std::move(e.msg));
  }
  queue_.clear();
  return out;
}

void PerceptionBatcher::record(std::uint64_t written, std::uint64_t failed)
{
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.written += written;
  stats_.failed += failed;
}

BatcherStats PerceptionBatcher::stats() const
{
  std::lock_guard<std::mutex> lock(mutex_);
  BatcherStats s = stats_;
  s.queued = queue_.size();
  return s;
}

WriteOutcome write_batch(
  const robotmem::Db & db, PerceptionBatcher & batcher,
  const std::vector<PerceptionBatcher::Message> & batch)
{
  WriteOutcome out;
  for (const PerceptionBatcher::Message & m : batch) {
    auto r = db.try_save_perception(m.description, perception_options(m));
    if (r) {
      ++out.written;
    } else {
      ++out.failed;
      if (out.first_status == robotmem::Status::Ok) {
        out.first_status = r.status();
        out.first_error = r.message();
      }
    }
  }
  batcher.record(out.written, out.failed);
  return out;
}

}  // namespace robotmem_ros
