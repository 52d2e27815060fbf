#include "robotmem_ros/service_logic.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace robotmem_ros
{

// The message constants are the C API's values: the handlers below convert
// with static_cast, so a mismatch must not compile.
static_assert(msg::StatusCode::OK == RM_OK, "msg::StatusCode::OK");
static_assert(msg::StatusCode::INVALID_ARGUMENT == RM_INVALID_ARGUMENT, "msg::StatusCode::INVALID_ARGUMENT");
static_assert(msg::StatusCode::NOT_FOUND == RM_NOT_FOUND, "msg::StatusCode::NOT_FOUND");
static_assert(msg::StatusCode::DUPLICATE == RM_DUPLICATE, "msg::StatusCode::DUPLICATE");
static_assert(msg::StatusCode::BUSY == RM_BUSY, "msg::StatusCode::BUSY");
static_assert(msg::StatusCode::IO == RM_IO, "msg::StatusCode::IO");
static_assert(msg::StatusCode::CORRUPT == RM_CORRUPT, "msg::StatusCode::CORRUPT");
static_assert(msg::StatusCode::EMBEDDING_UNAVAILABLE == RM_EMBEDDING_UNAVAILABLE, "msg::StatusCode::EMBEDDING_UNAVAILABLE");
static_assert(msg::StatusCode::FULL == RM_FULL, "msg::StatusCode::FULL");
static_assert(msg::StatusCode::INVALID_STATE == RM_INVALID_STATE, "msg::StatusCode::INVALID_STATE");
static_assert(msg::StatusCode::SCHEMA_TOO_NEW == RM_SCHEMA_TOO_NEW, "msg::StatusCode::SCHEMA_TOO_NEW");
static_assert(msg::StatusCode::CLOSED == RM_CLOSED, "msg::StatusCode::CLOSED");
static_assert(msg::StatusCode::READ_ONLY == RM_READ_ONLY, "msg::StatusCode::READ_ONLY");
static_assert(msg::StatusCode::INTERNAL == RM_INTERNAL, "msg::StatusCode::INTERNAL");
static_assert(msg::StatusCode::PANIC == RM_PANIC, "msg::StatusCode::PANIC");
static_assert(msg::Memory::TYPE_FACT == RM_MEMORY_FACT, "msg::Memory::TYPE_FACT");
static_assert(msg::Memory::TYPE_PERCEPTION == RM_MEMORY_PERCEPTION, "msg::Memory::TYPE_PERCEPTION");
static_assert(msg::Memory::STATUS_ACTIVE == RM_MEMORY_ACTIVE, "msg::Memory::STATUS_ACTIVE");
static_assert(msg::Memory::STATUS_SUPERSEDED == RM_MEMORY_SUPERSEDED, "msg::Memory::STATUS_SUPERSEDED");
static_assert(msg::Memory::STATUS_INVALIDATED == RM_MEMORY_INVALIDATED, "msg::Memory::STATUS_INVALIDATED");
static_assert(srv::Learn::Response::DUP_NONE == RM_DUP_NONE, "srv::Learn::Response::DUP_NONE");
static_assert(srv::Learn::Response::DUP_EXACT == RM_DUP_EXACT, "srv::Learn::Response::DUP_EXACT");
static_assert(srv::Learn::Response::DUP_JACCARD == RM_DUP_JACCARD, "srv::Learn::Response::DUP_JACCARD");
static_assert(srv::Learn::Response::DUP_COSINE == RM_DUP_COSINE, "srv::Learn::Response::DUP_COSINE");
static_assert(srv::Recall::Response::MODE_HYBRID == RM_MODE_HYBRID, "srv::Recall::Response::MODE_HYBRID");
static_assert(srv::Recall::Response::MODE_BM25_ONLY == RM_MODE_BM25_ONLY, "srv::Recall::Response::MODE_BM25_ONLY");
static_assert(srv::Recall::Response::MODE_VEC_ONLY == RM_MODE_VEC_ONLY, "srv::Recall::Response::MODE_VEC_ONLY");
static_assert(srv::Recall::Response::MODE_SCAN == RM_MODE_SCAN, "srv::Recall::Response::MODE_SCAN");
static_assert(msg::NodeStatus::EMBED_READY == RM_EMBED_READY, "msg::NodeStatus::EMBED_READY");
static_assert(msg::NodeStatus::EMBED_UNAVAILABLE == RM_EMBED_UNAVAILABLE, "msg::NodeStatus::EMBED_UNAVAILABLE");
static_assert(msg::NodeStatus::EMBED_MODEL_MISMATCH == RM_EMBED_MODEL_MISMATCH, "msg::NodeStatus::EMBED_MODEL_MISMATCH");

namespace
{

// Failure of a try_* call -> status + error of the response.
template<class R, class Resp>
bool failed(const R & r, Resp & resp)
{
  if (r.ok()) {
    resp.status = msg::StatusCode::OK;
    resp.error.clear();
    return false;
  }
  resp.status = static_cast<std::int32_t>(r.status());
  resp.error = r.message();
  return true;
}

template<class Resp>
void invalid(Resp & resp, std::string message)
{
  resp.status = msg::StatusCode::INVALID_ARGUMENT;
  resp.error = std::move(message);
}

std::string opt(const std::optional<std::string> & s)
{
  return s ? *s : std::string();
}

}  // namespace

void to_msg(const robotmem::Memory & m, msg::Memory & out)
{
  out.id = m.id;
  out.collection = m.collection;
  out.session_id = opt(m.session_id);
  out.memory_type = static_cast<std::int32_t>(m.type);
  out.content = m.content;
  out.human_summary = m.human_summary;
  out.category = m.category;
  out.confidence = m.confidence;
  out.status = static_cast<std::int32_t>(m.status);
  out.superseded_by = m.superseded_by;
  out.context = m.context_json;
  out.params_json = opt(m.params_json);
  out.spatial_json = opt(m.spatial_json);
  out.robot_json = opt(m.robot_json);
  out.task_json = opt(m.task_json);
  out.perception_type = static_cast<std::int32_t>(m.perception_type);
  out.perception_data.assign(m.perception_data.begin(), m.perception_data.end());
  out.perception_metadata = opt(m.perception_metadata);
  out.access_count = m.access_count;
  out.created_at = m.created_at;
  out.updated_at = m.updated_at;
  out.last_accessed = opt(m.last_accessed);
  out.score = 0.0;
  out.has_distance = false;
  out.distance = 0.0;
  out.matched = false;
}

void to_msg(const robotmem::Hit & hit, msg::Memory & out)
{
  to_msg(hit.memory, out);
  out.score = hit.score;
  out.has_distance = hit.distance.has_value();
  out.distance = hit.distance.value_or(0.0);
  out.matched = hit.matched;
}

void handle_learn(const robotmem::Db & db, const srv::Learn::Request & req, srv::Learn::Response & resp)
{
  robotmem::LearnOptions o;
  o.context = req.context;
  o.collection = req.collection;
  o.session_id = req.session_id;
  o.tags = req.tags;
  auto r = db.try_learn(req.insight, o);
  if (failed(r, resp)) {
    return;
  }
  resp.memory_id = r->memory_id;
  resp.duplicate = r->duplicate;
  resp.dup_method = static_cast<std::int32_t>(r->dup_method);
  resp.similarity = r->similarity;
  resp.category = std::move(r->category);
  resp.confidence = r->confidence;
  resp.tags = std::move(r->tags);
  resp.scope_files = std::move(r->scope_files);
  resp.has_embedding = r->has_embedding;
}

void handle_recall(const robotmem::Db & db, const srv::Recall::Request & req, srv::Recall::Response & resp)
{
  if (req.n < 0) {
    return invalid(resp, "n: must be 0 (default) or 1-" + std::to_string(RM_MAX_RESULTS) + ", got " +
             std::to_string(req.n));
  }
  robotmem::RecallOptions o;
  o.collection = req.collection;
  if (req.n > 0) {
    o.n = req.n;
  }
  if (req.has_min_confidence) {
    o.min_confidence = req.min_confidence;
  }
  o.session_id = req.session_id;
  o.context_filter_json(req.context_filter);
  o.spatial_sort_json(req.spatial_sort);
  auto r = db.try_recall(req.query, o);
  if (failed(r, resp)) {
    return;
  }
  resp.memories.resize(r->hits.size());
  for (std::size_t i = 0; i < r->hits.size(); ++i) {
    to_msg(r->hits[i], resp.memories[i]);
  }
  resp.mode = static_cast<std::int32_t>(r->mode);
  resp.query_vector = static_cast<std::int32_t>(r->query_vector);
  resp.query_ms = r->query_ms;
}

robotmem::PerceptionOptions perception_options(const msg::PerceptionData & m)
{
  robotmem::PerceptionOptions o;
  if (m.perception_type != msg::PerceptionData::TYPE_NONE) {
    // Out-of-range values go to the library, which rejects them (INVALID_ARGUMENT).
    o.type = static_cast<robotmem::PerceptionType>(m.perception_type);
  }
  o.data_view(m.data.data(), m.data.size());
  o.metadata = m.metadata;
  o.context = m.context;
  o.collection = m.collection;
  o.session_id = m.session_id;
  o.tags = m.tags;
  return o;
}

void handle_save_perception(
  const robotmem::Db & db, const srv::SavePerception::Request & req, srv::SavePerception::Response & resp)
{
  auto r = db.try_save_perception(req.perception.description, perception_options(req.perception));
  if (failed(r, resp)) {
    return;
  }
  resp.memory_id = r->memory_id;
  resp.duplicate = r->duplicate;
  resp.dup_method = static_cast<std::int32_t>(r->dup_method);
  resp.perception_type = static_cast<std::int32_t>(r->perception_type);
  resp.collection = std::move(r->collection);
  resp.has_embedding = r->has_embedding;
}

void handle_forget(const robotmem::Db & db, const srv::Forget::Request & req, srv::Forget::Response & resp)
{
  auto r = db.try_forget(req.memory_id, req.reason);
  if (failed(r, resp)) {
    return;
  }
  resp.memory_id = r->memory_id;
  resp.content = std::move(r->content);
  resp.reason = std::move(r->reason);
}

void handle_update(const robotmem::Db & db, const srv::Update::Request & req, srv::Update::Response & resp)
{
  std::optional<std::string_view> context;
  if (req.has_context) {
    context = req.context;
  }
  auto r = db.try_update(req.memory_id, req.new_content, context);
  if (failed(r, resp)) {
    return;
  }
  resp.memory_id = r->memory_id;
  resp.old_content = std::move(r->old_content);
  resp.new_content = std::move(r->new_content);
  resp.category = std::move(r->category);
  resp.confidence = r->confidence;
  resp.tags = std::move(r->tags);
}

void handle_start_session(
  const robotmem::Db & db, const srv::StartSession::Request & req, srv::StartSession::Response & resp)
{
  auto r = db.try_start_session(req.collection, req.context);
  if (failed(r, resp)) {
    return;
  }
  resp.session_id = std::move(r->session_id);
  resp.collection = std::move(r->collection);
  resp.active_memories_count = r->active_memories_count;
}

void handle_end_session(
  const robotmem::Db & db, const srv::EndSession::Request & req, srv::EndSession::Response & resp)
{
  std::optional<double> score;
  if (req.has_outcome_score) {
    score = req.outcome_score;
  }
  auto r = db.try_end_session(req.session_id, score);
  if (failed(r, resp)) {
    return;
  }
  resp.session_id = std::move(r->session_id);
  resp.collection = std::move(r->collection);
  resp.has_outcome_score = r->outcome_score.has_value();
  resp.outcome_score = r->outcome_score.value_or(0.0);
  resp.memory_count = r->memory_count;
  for (const auto & [name, count] : r->by_type) {
    resp.by_type_names.push_back(name);
    resp.by_type_counts.push_back(count);
  }
  for (const auto & [name, count] : r->by_category) {
    resp.by_category_names.push_back(name);
    resp.by_category_counts.push_back(count);
  }
  resp.decayed_count = r->decayed_count;
  resp.merged_groups = r->merged_groups;
  resp.superseded_count = r->superseded_count;
  resp.compression_ratio = r->compression_ratio;
  resp.avg_similarity = r->avg_similarity;
  resp.related.resize(r->related.size());
  for (std::size_t i = 0; i < r->related.size(); ++i) {
    to_msg(r->related[i], resp.related[i]);
  }
}

void fill_embedding_status(const robotmem::Db & db, msg::NodeStatus & out)
{
  auto r = db.try_embedding_status();
  if (!r) {
    out.embedding_state = msg::NodeStatus::EMBED_UNAVAILABLE;
    out.embedding_model.clear();
    out.embedding_reason = r.message();
    out.embedding_pending = 0;
    return;
  }
  out.embedding_state = static_cast<std::int32_t>(r->state);
  out.embedding_model = opt(r->model);
  out.embedding_reason = r->reason;
  out.embedding_pending = r->pending;
}

}  // namespace robotmem_ros
