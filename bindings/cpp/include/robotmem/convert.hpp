// robotmem C++17 wrapper: copies of C results into the owning C++ types, and
// RAII owners for the C results (implementation details; may change).
#ifndef ROBOTMEM_CONVERT_HPP
#define ROBOTMEM_CONVERT_HPP

#include <robotmem.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "detail.hpp"
#include "types.hpp"

namespace robotmem {
namespace detail {

// Owners that free a C result with its free function when they go out of scope,
// so an exception while copying (std::bad_alloc) never leaks it.
template <class T, void (*Free)(T*)>
struct CFree {
    void operator()(T* p) const noexcept { Free(p); }
};
template <class T, void (*Free)(T*)>
using COwned = std::unique_ptr<T, CFree<T, Free>>;

using LearnOwned = COwned<rm_learn_result, rm_learn_result_free>;
using RecallOwned = COwned<rm_recall_result, rm_recall_result_free>;
using MemoryOwned = COwned<rm_memory_result, rm_memory_result_free>;
using PerceptionOwned = COwned<rm_perception_result, rm_perception_result_free>;
using ForgetOwned = COwned<rm_forget_result, rm_forget_result_free>;
using UpdateOwned = COwned<rm_update_result, rm_update_result_free>;
using SessionOwned = COwned<rm_session, rm_session_free>;
using SummaryOwned = COwned<rm_session_summary, rm_session_summary_free>;
using EmbeddingInfoOwned = COwned<rm_embedding_info, rm_embedding_info_free>;
using LearnBatchOwned = COwned<rm_learn_batch_result, rm_learn_batch_result_free>;
using HistoryOwned = COwned<rm_history_result, rm_history_result_free>;
using StringOwned = COwned<char, rm_string_free>;

inline std::string str(const char* p) { return p ? std::string(p) : std::string(); }

inline std::optional<std::string> opt_str(const char* p) {
    return p ? std::optional<std::string>(std::string(p)) : std::nullopt;
}

inline std::vector<std::string> str_list(const char* const* items, std::size_t n) {
    std::vector<std::string> v;
    if (!items) return v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(str(items[i]));
    return v;
}

inline Memory copy_memory(const rm_memory& m) {
    Memory o;
    o.id = m.id;
    o.collection = str(m.collection);
    o.session_id = opt_str(m.session_id);
    o.type = static_cast<MemoryType>(m.memory_type);
    o.content = str(m.content);
    o.human_summary = str(m.human_summary);
    o.category = str(m.category);
    o.confidence = m.confidence;
    o.status = static_cast<MemoryStatus>(m.status);
    o.superseded_by = m.superseded_by;
    o.context_json = str(m.context_json);
    o.params_json = opt_str(m.params_json);
    o.spatial_json = opt_str(m.spatial_json);
    o.robot_json = opt_str(m.robot_json);
    o.task_json = opt_str(m.task_json);
    o.perception_type = static_cast<PerceptionType>(m.perception_type);
    if (m.perception_data && m.perception_data_len > 0)
        o.perception_data.assign(m.perception_data, m.perception_data + m.perception_data_len);
    o.perception_metadata = opt_str(m.perception_metadata);
    o.access_count = m.access_count;
    o.created_at = str(m.created_at);
    o.updated_at = str(m.updated_at);
    o.last_accessed = opt_str(m.last_accessed);
    o.expires_at = opt_str(m.expires_at);
    o.expired = m.expired;
    return o;
}

inline std::vector<Hit> copy_hits(const rm_hit* hits, std::size_t n) {
    std::vector<Hit> v;
    if (!hits) return v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        Hit h;
        h.memory = copy_memory(hits[i].memory);
        h.score = hits[i].score;
        if (hits[i].has_distance) h.distance = hits[i].distance;
        h.matched = hits[i].matched;
        if (hits[i].has_lexical) h.lexical = hits[i].lexical;
        if (hits[i].has_cosine) h.cosine = hits[i].cosine;
        if (hits[i].similar_ids) h.similar.assign(hits[i].similar_ids, hits[i].similar_ids + hits[i].similar_count);
        v.push_back(std::move(h));
    }
    return v;
}

inline std::vector<std::pair<std::string, std::int64_t>> copy_counts(const rm_count* c, std::size_t n) {
    std::vector<std::pair<std::string, std::int64_t>> v;
    if (!c) return v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.emplace_back(str(c[i].name), c[i].count);
    return v;
}

inline void copy_into(const rm_learn_result& r, LearnResult& o) {
    o.memory_id = r.memory_id;
    o.duplicate = r.duplicate;
    o.dup_method = static_cast<DupMethod>(r.dup_method);
    o.similarity = r.similarity;
    o.category = str(r.category);
    o.confidence = r.confidence;
    o.tags = str_list(r.tags, r.tag_count);
    o.scope_files = str_list(r.scope_files, r.scope_file_count);
    o.has_embedding = r.has_embedding;
    o.evicted.assign(r.evicted_ids, r.evicted_ids + r.evicted_count);
}

inline void copy_into(const rm_embedding_info& r, EmbeddingStatus& o) {
    o.state = static_cast<EmbedState>(r.state);
    o.model = opt_str(r.model);
    o.dim = r.dim;
    o.stored_model = opt_str(r.stored_model);
    o.pending = r.pending;
    o.kernel = str(r.kernel);
    o.reason = str(r.reason);
    o.index_kernel = str(r.index_kernel);
}

/// One LearnResult per item, in item order (no JSON: the library renders the
/// batch as a whole, not its items).
inline void copy_into(const rm_learn_batch_result& r, std::vector<LearnResult>& o) {
    o.clear();
    if (!r.results) return;
    o.reserve(r.count);
    for (std::size_t i = 0; i < r.count; ++i) {
        o.emplace_back();
        copy_into(r.results[i], o.back());
    }
}

inline void copy_into(const rm_recall_result& r, RecallResult& o) {
    o.hits = copy_hits(r.hits, r.count);
    o.mode = static_cast<SearchMode>(r.mode);
    o.query_vector = static_cast<QueryVector>(r.query_vector);
    o.query_ms = r.query_ms;
}

inline void copy_into(const rm_memory_result& r, MemoryResult& o) {
    o.memory = copy_memory(r.memory);
    o.tags = str_list(r.tags, r.tag_count);
}

inline void copy_into(const rm_perception_result& r, PerceptionResult& o) {
    o.memory_id = r.memory_id;
    o.duplicate = r.duplicate;
    o.dup_method = static_cast<DupMethod>(r.dup_method);
    o.perception_type = static_cast<PerceptionType>(r.perception_type);
    o.collection = str(r.collection);
    o.has_embedding = r.has_embedding;
    o.evicted.assign(r.evicted_ids, r.evicted_ids + r.evicted_count);
}

inline void copy_into(const rm_forget_result& r, ForgetResult& o) {
    o.memory_id = r.memory_id;
    o.content = str(r.content);
    o.reason = str(r.reason);
}

inline void copy_into(const rm_update_result& r, UpdateResult& o) {
    o.memory_id = r.memory_id;
    o.old_content = str(r.old_content);
    o.new_content = str(r.new_content);
    o.category = str(r.category);
    o.confidence = r.confidence;
    o.tags = str_list(r.tags, r.tag_count);
}

inline void copy_into(const rm_session& r, Session& o) {
    o.session_id = str(r.session_id);
    o.collection = str(r.collection);
    o.active_memories_count = r.active_memories_count;
}

inline void copy_into(const rm_session_summary& r, SessionSummary& o) {
    o.session_id = str(r.session_id);
    o.collection = str(r.collection);
    if (r.has_outcome_score) o.outcome_score = r.outcome_score;
    o.memory_count = r.memory_count;
    o.by_type = copy_counts(r.by_type, r.by_type_count);
    o.by_category = copy_counts(r.by_category, r.by_category_count);
    o.decayed_count = r.decayed_count;
    o.merged_groups = r.merged_groups;
    o.superseded_count = r.superseded_count;
    o.compression_ratio = r.compression_ratio;
    o.avg_similarity = r.avg_similarity;
    o.related = copy_hits(r.related, r.related_count);
}

inline void copy_into(const rm_history_result& r, History& o) {
    o.memory_id = r.memory_id;
    o.versions.clear();
    o.versions.reserve(r.count);
    for (std::size_t i = 0; i < r.count; ++i) {
        const rm_memory_version& v = r.versions[i];
        MemoryVersion m;
        m.version = v.version;
        m.writer = str(v.writer);
        m.content = str(v.content);
        m.context_json = str(v.context_json);
        m.category = str(v.category);
        m.confidence = v.confidence;
        m.status = static_cast<MemoryStatus>(v.status);
        m.superseded_by = v.superseded_by;
        m.invalidated_reason = opt_str(v.invalidated_reason);
        m.expires_at = opt_str(v.expires_at);
        m.valid_from = str(v.valid_from);
        m.valid_to = opt_str(v.valid_to);
        m.cause = str(v.cause);
        m.cause_writer = str(v.cause_writer);
        o.versions.push_back(std::move(m));
    }
}

/// Copies a C result into `out`, then (with Json::Render) adds the library's JSON
/// rendering of the same C result; the caller's owner frees it afterwards.
/// Throws std::bad_alloc only.
template <class CResult, class Out>
bool finish(const CResult* raw, rm_status (*to_json)(const CResult*, char**), Json json, Out& out,
            Failure& f) {
    copy_into(*raw, out);
    if (json == Json::Render) {
        char* text = nullptr;
        const rm_status st = to_json(raw, &text);
        StringOwned owned(text);
        if (st != RM_OK)
            return f.from_c(st, "the call succeeded but rendering its result as JSON failed: ");
        out.json = str(text);
    }
    return true;
}

}  // namespace detail
}  // namespace robotmem

#endif  // ROBOTMEM_CONVERT_HPP
