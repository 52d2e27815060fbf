// robotmem C++17 wrapper: the definitions of Db's private members, each the
// call of one C function with its arguments converted and its result copied
// (implementation details; may change). Included at the end of
// <robotmem/robotmem.hpp>, which declares them; include that file, not this one.
#ifndef ROBOTMEM_DB_IMPL_HPP
#define ROBOTMEM_DB_IMPL_HPP

// The declarations (when this file is included on its own; robotmem.hpp
// includes this one at its end, after them).
#include "robotmem.hpp"

namespace robotmem {

namespace detail {
/// rm_open_options.clock for OpenOptions::clock: an exception is no time (-1:
/// the library reads the system clock for that call).
inline std::int64_t clock_read(void* context) noexcept {
#if ROBOTMEM_EXCEPTIONS
    try {
#endif
        return (*static_cast<const std::function<std::int64_t()>*>(context))();
#if ROBOTMEM_EXCEPTIONS
    } catch (...) {
        return -1;
    }
#endif
}
/// rm_open_options.clock_free: the library hands the copy back.
inline void clock_free(void* context) noexcept { delete static_cast<std::function<std::int64_t()>*>(context); }
}  // namespace detail

inline bool Db::open_into(const OpenOptions& o, Db& out, detail::Failure& f) {
    rm_open_options c;
    rm_open_options_init(&c);
    if (o.path) {
        if (!detail::check_no_nul(*o.path, "opts.path", f)) return false;
        c.path = o.path->c_str();
    }
    if (o.default_collection) {
        if (!detail::check_no_nul(*o.default_collection, "opts.default_collection", f)) return false;
        c.default_collection = o.default_collection->c_str();
    }
    if (o.busy_timeout_ms) c.busy_timeout_ms = *o.busy_timeout_ms;
    if (o.durability) c.durability = static_cast<rm_durability>(*o.durability);
    if (o.rrf_k) c.rrf_k = *o.rrf_k;
    if (o.decay_rate) c.decay_rate = *o.decay_rate;
    if (o.preload) c.preload = *o.preload;
    if (o.max_db_bytes) c.max_db_bytes = *o.max_db_bytes;
    if (o.verify) c.verify = *o.verify;
    if (o.embeddings) c.embeddings = *o.embeddings;
    if (o.model_dir) {
        if (!detail::check_no_nul(*o.model_dir, "opts.model_dir", f)) return false;
        c.model_dir = o.model_dir->c_str();
    }
    if (o.ort_library) {
        if (!detail::check_no_nul(*o.ort_library, "opts.ort_library", f)) return false;
        c.ort_library = o.ort_library->c_str();
    }
    if (o.embed_threads) c.embed_threads = *o.embed_threads;
    if (o.embed_batch) c.embed_batch = *o.embed_batch;
    if (o.cosine_dedup) c.cosine_dedup = *o.cosine_dedup;
    if (o.read_only) c.read_only = *o.read_only;
    if (o.default_ttl_json) {
        if (!detail::check_no_nul(*o.default_ttl_json, "opts.default_ttl_json", f)) return false;
        c.default_ttl_json = o.default_ttl_json->c_str();
    }
    if (o.max_memories) c.max_memories = *o.max_memories;
    if (o.max_memories_json) {
        if (!detail::check_no_nul(*o.max_memories_json, "opts.max_memories_json", f)) return false;
        c.max_memories_json = o.max_memories_json->c_str();
    }
    if (o.evict_protected) c.evict_protected = *o.evict_protected;
    if (o.key) c.key = o.key->data(), c.key_len = o.key->size();
    if (o.key_file) {
        if (!detail::check_no_nul(*o.key_file, "opts.key_file", f)) return false;
        c.key_file = o.key_file->c_str();
    }
    if (o.clock) {
        // Given to the library, which frees it (clock_free) when the handle is
        // closed or the open fails. Last: no failure above may leak it.
        c.clock_context = new std::function<std::int64_t()>(o.clock);
        c.clock = detail::clock_read;
        c.clock_free = detail::clock_free;
    }
    rm_db* h = nullptr;
    const rm_status st = rm_open(&c, &h);
    if (st != RM_OK) return f.from_c(st);
    out = Db(h);
    return true;
}

inline bool Db::learn_into(std::string_view insight, const LearnOptions& o, Json json, LearnResult& out,
                detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString text;
    detail::TagArray tags;
    rm_learn_options c;
    if (!text.assign(insight, "insight", f) || !learn_options_into(o, tags, c, f)) return false;
    rm_learn_result* raw = nullptr;
    const rm_status st = rm_learn(db, text.get(), &c, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::LearnOwned owned(raw);
    return detail::finish(raw, rm_learn_result_json, json, out, f);
}

inline bool Db::recall_into(std::string_view query, const RecallOptions& o, Json json, RecallResult& out,
                 detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString text;
    std::string filter, spatial;  // rendered builders (raw JSON is passed in place)
    rm_recall_options c;
    rm_recall_options_init(&c);
    if (!text.assign(query, "query", f) || !detail::opt_c_str(o.collection, "opts.collection", c.collection, f) ||
        !detail::opt_c_str(o.session_id, "opts.session_id", c.session_id, f))
        return false;
    if (o.n) c.n = static_cast<std::int32_t>(*o.n);
    if (o.min_confidence) c.min_confidence = *o.min_confidence;
    c.group_similar = o.group_similar;
    if (o.conditions_.empty()) {
        if (!detail::opt_c_str(o.raw_filter_, "opts.context_filter", c.context_filter, f)) return false;
    } else {
        if (!o.render_filter_into(filter, f)) return false;
        c.context_filter = filter.c_str();
    }
    if (!o.spatial_) {
        if (!detail::opt_c_str(o.raw_spatial_, "opts.spatial_sort", c.spatial_sort, f)) return false;
    } else {
        if (!o.render_spatial_into(spatial, f)) return false;
        c.spatial_sort = spatial.c_str();
    }
    rm_recall_result* raw = nullptr;
    const rm_status st = rm_recall(db, text.get(), &c, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::RecallOwned owned(raw);
    return detail::finish(raw, rm_recall_result_json, json, out, f);
}

inline bool Db::perception_into(std::string_view description, const PerceptionOptions& o, Json json,
                     PerceptionResult& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString text;
    detail::TagArray tags;
    rm_perception_options c;
    rm_perception_options_init(&c);
    if (!text.assign(description, "description", f) ||
        !detail::opt_c_str(o.metadata, "opts.metadata", c.metadata, f) ||
        !detail::opt_c_str(o.context, "opts.context", c.context, f) ||
        !detail::opt_c_str(o.collection, "opts.collection", c.collection, f) ||
        !detail::opt_c_str(o.session_id, "opts.session_id", c.session_id, f) ||
        !detail::opt_c_str(o.expires_at, "opts.expires_at", c.expires_at, f) || !tags.set(o.tags, f))
        return false;
    c.ttl_seconds = o.ttl_seconds;
    if (o.type) c.perception_type = static_cast<rm_perception_type>(*o.type);
    if (o.view_ || o.view_size_) {
        if (!o.data.empty())
            return f.set(Status::InvalidArgument,
                         "opts.data and opts.data_view are both set; use one of them");
        c.data = o.view_;
        c.data_len = o.view_size_;
    } else if (!o.data.empty()) {
        c.data = o.data.data();
        c.data_len = o.data.size();
    }
    c.tags = tags.data();
    c.tag_count = tags.size();
    rm_perception_result* raw = nullptr;
    const rm_status st = rm_save_perception(db, text.get(), &c, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::PerceptionOwned owned(raw);
    return detail::finish(raw, rm_perception_result_json, json, out, f);
}

inline bool Db::get_into(std::int64_t memory_id, Json json, MemoryResult& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    rm_memory_result* raw = nullptr;
    const rm_status st = rm_get_memory(db, memory_id, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::MemoryOwned owned(raw);
    return detail::finish(raw, rm_memory_result_json, json, out, f);
}

inline bool Db::rekey_into(const std::array<std::uint8_t, 32>& key, bool& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    const rm_status st = rm_rekey(db, key.data(), key.size());
    if (st != RM_OK) return f.from_c(st);
    out = true;
    return true;
}

inline bool Db::set_expiry_into(std::int64_t memory_id, double ttl_seconds, std::string_view expires_at, bool& out,
                     detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString at;
    if (!at.assign_optional(expires_at, "expires_at", f)) return false;
    const rm_status st = rm_set_expiry(db, memory_id, ttl_seconds, at.get());
    if (st != RM_OK) return f.from_c(st);
    out = true;
    return true;
}

inline bool Db::forget_into(std::int64_t memory_id, std::string_view reason, Json json, ForgetResult& out,
                 detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString text;
    if (!text.assign(reason, "reason", f)) return false;
    rm_forget_result* raw = nullptr;
    const rm_status st = rm_forget(db, memory_id, text.get(), &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::ForgetOwned owned(raw);
    return detail::finish(raw, rm_forget_result_json, json, out, f);
}

inline bool Db::update_into(std::int64_t memory_id, std::string_view new_content, std::optional<std::string_view> context,
                 Json json, UpdateResult& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString text, ctx;
    if (!text.assign(new_content, "new_content", f)) return false;
    if (context && !ctx.assign(*context, "context", f)) return false;
    rm_update_result* raw = nullptr;
    const rm_status st = rm_update(db, memory_id, text.get(), context ? ctx.get() : nullptr, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::UpdateOwned owned(raw);
    return detail::finish(raw, rm_update_result_json, json, out, f);
}

inline bool Db::start_into(std::string_view collection, std::string_view context, Json json, Session& out,
                detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString coll, ctx;
    if (!coll.assign_optional(collection, "collection", f) || !ctx.assign_optional(context, "context", f))
        return false;
    rm_session* raw = nullptr;
    const rm_status st = rm_start_session(db, coll.get(), ctx.get(), &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::SessionOwned owned(raw);
    return detail::finish(raw, rm_session_json, json, out, f);
}

inline bool Db::end_into(std::string_view session_id, std::optional<double> score, Json json, SessionSummary& out,
              detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString sid;
    if (!sid.assign(session_id, "session_id", f)) return false;
    rm_session_summary* raw = nullptr;
    const rm_status st = rm_end_session(db, sid.get(), score ? &*score : nullptr, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::SummaryOwned owned(raw);
    return detail::finish(raw, rm_session_summary_json, json, out, f);
}

inline bool Db::status_into(Json json, EmbeddingStatus& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    rm_embedding_info* raw = nullptr;
    const rm_status st = rm_embedding_status(db, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::EmbeddingInfoOwned owned(raw);
    return detail::finish(raw, rm_embedding_info_json, json, out, f);
}

inline bool Db::purge_into(double older_than_seconds, PurgeResult& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    rm_purge_result raw{};
    const rm_status st = rm_purge(db, older_than_seconds, &raw);
    if (st != RM_OK) return f.from_c(st);
    out = PurgeResult{raw.purged, raw.batches, raw.reclaimed_bytes, raw.live_bytes};
    return true;
}

inline bool Db::reembed_into(std::size_t limit, ReembedResult& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    rm_reembed_result raw{};
    const rm_status st = rm_reembed(db, limit, &raw);
    if (st != RM_OK) return f.from_c(st);
    out.embedded = raw.embedded;
    out.remaining = raw.remaining;
    out.rebuilt = raw.rebuilt;
    return true;
}

/// rm_learn_options for `o` (strings point into `o`, tags into `tags`).
/// Fails on a NUL byte, naming the field.
inline bool Db::learn_options_into(const LearnOptions& o, detail::TagArray& tags, rm_learn_options& c,
                               detail::Failure& f) {
    rm_learn_options_init(&c);
    if (!detail::opt_c_str(o.context, "opts.context", c.context, f) ||
        !detail::opt_c_str(o.collection, "opts.collection", c.collection, f) ||
        !detail::opt_c_str(o.session_id, "opts.session_id", c.session_id, f) ||
        !detail::opt_c_str(o.expires_at, "opts.expires_at", c.expires_at, f) || !tags.set(o.tags, f))
        return false;
    c.ttl_seconds = o.ttl_seconds;
    c.tags = tags.data();
    c.tag_count = tags.size();
    return true;
}

inline bool Db::batch_into(const std::vector<LearnItem>& items, std::vector<LearnResult>& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    // The library checks the count (RM_MAX_BATCH) before it reads an item.
    const std::size_t n = items.size();
    // The C items point into these vectors and into `items` (whose strings are
    // already NUL-terminated: nothing is copied); none of them reallocates below.
    std::vector<rm_learn_options> opts(n);
    std::vector<detail::TagArray> tags(n);
    std::vector<rm_learn_item> c(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (!detail::check_no_nul(items[i].insight, "insight", f) ||
            !learn_options_into(items[i].opts, tags[i], opts[i], f)) {
            f.message.insert(0, "items[" + std::to_string(i) + "]: ");  // as the library's own
            return false;
        }
        c[i].insight = items[i].insight.c_str();  // "" stays "": the library names the blank item
        c[i].opts = &opts[i];
    }
    rm_learn_batch_result* raw = nullptr;
    const rm_status st = rm_learn_batch(db, n ? c.data() : nullptr, n, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::LearnBatchOwned owned(raw);
    detail::copy_into(*raw, out);
    return true;
}

inline bool Db::history_into(std::int64_t memory_id, Json json, History& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    rm_history_result* raw = nullptr;
    const rm_status st = rm_memory_history(db, memory_id, &raw);
    if (st != RM_OK) return f.from_c(st);
    const detail::HistoryOwned owned(raw);
    return detail::finish(raw, rm_history_result_json, json, out, f);
}

inline bool Db::as_of_into(std::string_view time, Db& out, detail::Failure& f) const {
    rm_db* db = live(f);
    if (!db) return false;
    detail::CString at;
    if (!at.assign(time, "time", f)) return false;
    rm_db* h = nullptr;
    const rm_status st = rm_open_as_of(db, at.get(), &h);
    if (st != RM_OK) return f.from_c(st);
    out = Db(h);
    return true;
}

}  // namespace robotmem

#endif  // ROBOTMEM_DB_IMPL_HPP
