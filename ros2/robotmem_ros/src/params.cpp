#include "robotmem_ros/params.hpp"

#include <string>
#include <utility>
#include <vector>

namespace robotmem_ros
{

namespace
{

void range(
  std::vector<std::string> & errors, const char * name, std::int64_t v, std::int64_t lo,
  std::int64_t hi)
{
  if (v < lo || v > hi) {
    errors.push_back(
      std::string(name) + ": must be " + std::to_string(lo) + "-" + std::to_string(hi) + ", got " +
      std::to_string(v));
  }
}

bool blank(const std::string & s)
{
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

std::vector<std::string> validate(const NodeParams & p)
{
  std::vector<std::string> e;
  if (p.db_path.find('\0') != std::string::npos) {
    e.push_back("db_path: contains a NUL byte");
  }
  if (blank(p.collection)) {
    e.push_back("collection: must not be empty");  // (its length is checked by the library)
  }
  if (p.durability != "full" && p.durability != "normal") {
    e.push_back("durability: must be \"full\" or \"normal\", got \"" + p.durability + "\"");
  }
  if (blank(p.perception_topic)) {
    e.push_back("perception_topic: must not be empty");
  }
  range(e, "perception_qos_depth", p.perception_qos_depth, 1, 10000);
  if (p.perception_qos_reliability != "reliable" && p.perception_qos_reliability != "best_effort") {
    e.push_back(
      "perception_qos_reliability: must be \"reliable\" or \"best_effort\", got \"" +
      p.perception_qos_reliability + "\"");
  }
  range(e, "batch_size", p.batch_size, 1, RM_MAX_BATCH);
  range(e, "flush_interval_ms", p.flush_interval_ms, 1, 60000);
  range(e, "max_queue", p.max_queue, p.batch_size < 1 ? 1 : p.batch_size, 1000000);
  range(e, "status_period_ms", p.status_period_ms, 100, 3600000);
  return e;
}

std::string validation_message(const NodeParams & p)
{
  std::string out;
  for (const std::string & m : validate(p)) {
    if (!out.empty()) {
      out += "; ";
    }
    out += m;
  }
  return out;
}

robotmem::OpenOptions open_options(const NodeParams & p)
{
  robotmem::OpenOptions o;
  if (!p.db_path.empty()) {
    o.path = p.db_path;
  }
  o.default_collection = p.collection;
  if (!p.model_dir.empty()) {
    o.model_dir = p.model_dir;
  }
  if (!p.ort_library.empty()) {
    o.ort_library = p.ort_library;
  }
  o.embeddings = p.embeddings;
  o.durability = p.durability == "normal" ? robotmem::Durability::Normal : robotmem::Durability::Full;
  return o;
}

std::function<std::int64_t()> clock_ms(std::function<std::int64_t()> nanoseconds)
{
  return [nanoseconds = std::move(nanoseconds)]() -> std::int64_t {
      const std::int64_t ns = nanoseconds();
      return ns == 0 ? -1 : ns / 1000000;
    };
}

bool best_effort(const NodeParams & p)
{
  return p.perception_qos_reliability == "best_effort";
}

}  // namespace robotmem_ros
