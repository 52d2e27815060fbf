// robotmem C++17 wrapper: enumerations and the owning result types.
//
// Part of the header-only wrapper over the C ABI in <robotmem.h>; include
// <robotmem/robotmem.hpp> rather than this file.
//
// Every result is a plain value type (copyable, nothrow-movable) holding its own
// copies of the strings and bytes of the C result, which the wrapper frees before
// the Db method returns. Results therefore outlive the Db and may be read, copied
// or moved to any thread. None of them refers to library memory.
#ifndef ROBOTMEM_TYPES_HPP
#define ROBOTMEM_TYPES_HPP

#include <robotmem.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"

namespace robotmem {

/// How hard a commit works to survive a power cut (rm_durability).
enum class Durability : std::int32_t {
    Full = RM_DURABILITY_FULL,     ///< fsync on every commit (library default)
    Normal = RM_DURABILITY_NORMAL, ///< no fsync per commit; last commits may be lost on power cut
};

/// How a duplicate was recognised (rm_dup_method).
enum class DupMethod : std::int32_t {
    None = RM_DUP_NONE,       ///< not a duplicate: the memory was created
    Exact = RM_DUP_EXACT,     ///< same content hash
    Jaccard = RM_DUP_JACCARD, ///< word-set Jaccard > 0.70 and the same numbers
    Cosine = RM_DUP_COSINE,   ///< embedding cosine similarity > 0.85
};

/// Kind of memory (rm_memory_type).
enum class MemoryType : std::int32_t {
    Fact = RM_MEMORY_FACT,             ///< stored by Db::learn()
    Perception = RM_MEMORY_PERCEPTION, ///< stored by Db::save_perception()
};

/// Lifecycle state of a memory (rm_memory_status).
enum class MemoryStatus : std::int32_t {
    Active = RM_MEMORY_ACTIVE,
    Superseded = RM_MEMORY_SUPERSEDED,   ///< merged into Memory::superseded_by by consolidation
    Invalidated = RM_MEMORY_INVALIDATED, ///< forgotten with Db::forget()
};

/// Perception type (rm_perception_type); None for facts.
enum class PerceptionType : std::int32_t {
    None = RM_PERCEPTION_NONE,
    Visual = RM_PERCEPTION_VISUAL,
    Tactile = RM_PERCEPTION_TACTILE,
    Auditory = RM_PERCEPTION_AUDITORY,
    Proprioceptive = RM_PERCEPTION_PROPRIOCEPTIVE,
    Procedural = RM_PERCEPTION_PROCEDURAL,
};

/// Which ranked lists produced a recall (rm_search_mode).
enum class SearchMode : std::int32_t {
    Hybrid = RM_MODE_HYBRID,      ///< BM25 and vector lists fused (weighted BM25 share + cosine)
    Bm25Only = RM_MODE_BM25_ONLY, ///< BM25 only (no model, query not representable, or no neighbour above the cosine floor)
    VecOnly = RM_MODE_VEC_ONLY,   ///< vector only (no memory holds a query word)
    Scan = RM_MODE_SCAN,          ///< no searchable word in the query: newest matching memories
};

/// What became of the query's embedding in a recall (rm_query_vector).
enum class QueryVector : std::int32_t {
    None = RM_QUERY_VECTOR_NONE,                       ///< no vector search (no model, model mismatch, or no letter/digit)
    Embedded = RM_QUERY_VECTOR_EMBEDDED,               ///< the query was embedded and searched
    Unrepresentable = RM_QUERY_VECTOR_UNREPRESENTABLE, ///< the model cannot represent the query: BM25 alone
};

/// Whether vector search works on a Db (rm_embed_state).
enum class EmbedState : std::int32_t {
    Ready = RM_EMBED_READY,                  ///< model loaded, stored vectors are its own: hybrid recall
    Unavailable = RM_EMBED_UNAVAILABLE,      ///< no model or ONNX Runtime: BM25 only (see reason)
    ModelMismatch = RM_EMBED_MODEL_MISMATCH, ///< stored vectors from another model: BM25 only until reembed()
};

/// Whether a Db call also renders its result as JSON (with the library's
/// rm_*_json function, while the C result is still alive). Skip costs nothing.
enum class Json : bool {
    Skip = false,  ///< typed result only (default)
    Render = true, ///< typed result plus its JSON in `json` / to_json()
};

/// Lower-case names for logs ("full", "exact", "fact", "active", "tactile",
/// "bm25_only", ...); "unknown" for values outside the enum. Never throw.
inline const char* to_string(Durability v) noexcept {
    switch (v) {
    case Durability::Full: return "full";
    case Durability::Normal: return "normal";
    }
    return "unknown";
}
/// See to_string(Durability).
inline const char* to_string(DupMethod v) noexcept {
    switch (v) {
    case DupMethod::None: return "none";
    case DupMethod::Exact: return "exact";
    case DupMethod::Jaccard: return "jaccard";
    case DupMethod::Cosine: return "cosine";
    }
    return "unknown";
}
/// See to_string(Durability).
inline const char* to_string(MemoryType v) noexcept {
    switch (v) {
    case MemoryType::Fact: return "fact";
    case MemoryType::Perception: return "perception";
    }
    return "unknown";
}
/// See to_string(Durability).
inline const char* to_string(MemoryStatus v) noexcept {
    switch (v) {
    case MemoryStatus::Active: return "active";
    case MemoryStatus::Superseded: return "superseded";
    case MemoryStatus::Invalidated: return "invalidated";
    }
    return "unknown";
}
/// See to_string(Durability).
inline const char* to_string(PerceptionType v) noexcept {
    switch (v) {
    case PerceptionType::None: return "none";
    case PerceptionType::Visual: return "visual";
    case PerceptionType::Tactile: return "tactile";
    case PerceptionType::Auditory: return "auditory";
    case PerceptionType::Proprioceptive: return "proprioceptive";
    case PerceptionType::Procedural: return "procedural";
    }
    return "unknown";
}
/// See to_string(Durability).
inline const char* to_string(SearchMode v) noexcept {
    switch (v) {
    case SearchMode::Hybrid: return "hybrid";
    case SearchMode::Bm25Only: return "bm25_only";
    case SearchMode::VecOnly: return "vec_only";
    case SearchMode::Scan: return "scan";
    }
    return "unknown";
}
/// See to_string(Durability): "ready", "unavailable", "model_mismatch" (as in the
/// library's JSON).
inline const char* to_string(EmbedState v) noexcept {
    switch (v) {
    case EmbedState::Ready: return "ready";
    case EmbedState::Unavailable: return "unavailable";
    case EmbedState::ModelMismatch: return "model_mismatch";
    }
    return "unknown";
}

/// Base of every result: the optional JSON rendering. `json` is set only when
/// the call was made with Json::Render; it is exactly the text of the library's
/// rm_*_json function for the C result the typed fields were copied from.
struct JsonRendering {
    /// The JSON text, or nullopt when the call used Json::Skip.
    std::optional<std::string> json;

    /// The JSON text. Throws robotmem::Error(Status::InvalidState) when the call
    /// that produced this result did not ask for Json::Render.
    const std::string& to_json() const {
        if (!json) detail::raise(Status::InvalidState, "JSON was not rendered: call with robotmem::Json::Render");
        return *json;
    }
};

/// Result of Db::learn() (rm_learn_result).
struct LearnResult : JsonRendering {
    std::int64_t memory_id = 0;  ///< new memory, or the existing one when duplicate
    bool duplicate = false;      ///< nothing stored: an equivalent active memory exists
    DupMethod dup_method = DupMethod::None;
    double similarity = 0.0;     ///< to the existing memory (1.0 exact), 0 when created
    std::string category;        ///< auto-classified category
    double confidence = 0.0;     ///< estimated confidence, 0.80-0.95
    std::vector<std::string> tags;        ///< automatic tags followed by the user tags
    std::vector<std::string> scope_files;
    /// Whether the memory got its vector (false without a usable model, for texts
    /// the model cannot represent, and for duplicates; Db::reembed() embeds later).
    bool has_embedding = false;
    /// Memories hard-deleted to keep the memory budget (OpenOptions::max_memories),
    /// in eviction order; empty almost always.
    std::vector<std::int64_t> evicted;
};

/// A memory (rm_memory): every field copied out of the C struct.
struct Memory {
    std::int64_t id = 0;
    std::string collection;
    std::optional<std::string> session_id;  ///< nullopt: belongs to no session
    MemoryType type = MemoryType::Fact;
    std::string content;
    std::string human_summary;
    std::string category;
    double confidence = 0.0;                ///< 0-1; decays unless the category is protected
    MemoryStatus status = MemoryStatus::Active;
    std::int64_t superseded_by = 0;         ///< id of the replacing memory; 0 if none
    std::string context_json;               ///< the full context JSON object
    std::optional<std::string> params_json; ///< context fields lifted as JSON texts; nullopt when absent
    std::optional<std::string> spatial_json;
    std::optional<std::string> robot_json;
    std::optional<std::string> task_json;
    PerceptionType perception_type = PerceptionType::None;
    std::vector<std::uint8_t> perception_data;     ///< byte for byte as stored (may hold NUL bytes); empty for facts
    std::optional<std::string> perception_metadata; ///< JSON; nullopt when absent
    std::int64_t access_count = 0;
    std::string created_at;                  ///< ISO 8601 UTC, e.g. "2026-03-09T10:30:00.123Z"
    std::string updated_at;
    std::optional<std::string> last_accessed;
    std::optional<std::string> expires_at;   ///< when it expires; nullopt: never
    bool expired = false;                    ///< its expiry had passed when read (left out of recall)
};

/// One recall result (rm_hit).
struct Hit {
    Memory memory;
    double score = 0.0;             ///< fused relevance; the best hit of a call is 1.0; 0 when !matched
    std::optional<double> distance; ///< set with spatial_sort; +infinity when the memory has no usable coordinates
    /// The memory matched the query (a shared word, or its vector above the cosine
    /// floor). With context_filter, session_id or spatial_sort a recall also returns
    /// memories that only satisfy those: after the matches, newest first; with
    /// spatial_sort the nearest, whatever the query.
    bool matched = false;
    std::optional<double> lexical;  ///< share of the query's BM25 weight (0-1), when it holds a query word
    std::optional<double> cosine;   ///< cosine to the query's vector (hybrid recall)
    /// With RecallOptions::group_similar: ids of the other ranked memories that say
    /// the same thing as this one, best first.
    std::vector<std::int64_t> similar;
};

/// Result of Db::recall() (rm_recall_result).
struct RecallResult : JsonRendering {
    std::vector<Hit> hits;  ///< best first (nearest first with spatial_sort)
    SearchMode mode = SearchMode::Bm25Only;
    QueryVector query_vector = QueryVector::None;
    double query_ms = 0.0;  ///< time spent in the search
};

/// Result of Db::get_memory() (rm_memory_result): the memory and its tags.
struct MemoryResult : JsonRendering {
    Memory memory;
    std::vector<std::string> tags;
};

/// Result of Db::save_perception() (rm_perception_result).
struct PerceptionResult : JsonRendering {
    std::int64_t memory_id = 0;  ///< new memory, or the identical existing one when duplicate
    bool duplicate = false;
    DupMethod dup_method = DupMethod::None;
    PerceptionType perception_type = PerceptionType::None;
    std::string collection;
    bool has_embedding = false;
    std::vector<std::int64_t> evicted;  ///< evicted to keep the memory budget, as for LearnResult
};

/// Result of Db::forget() (rm_forget_result).
struct ForgetResult : JsonRendering {
    std::int64_t memory_id = 0;
    std::string content;  ///< content of the forgotten memory
    std::string reason;
};

/// Result of Db::update() (rm_update_result).
struct UpdateResult : JsonRendering {
    std::int64_t memory_id = 0;
    std::string old_content;
    std::string new_content;
    std::string category;           ///< re-classified category of the new content
    double confidence = 0.0;
    std::vector<std::string> tags;  ///< the new automatic tags (user tags are kept on the memory)
};

/// Result of Db::start_session() (rm_session).
struct Session : JsonRendering {
    std::string session_id;  ///< UUID (36 characters): pass it to learn / recall / end_session
    std::string collection;
    std::int64_t active_memories_count = 0;  ///< active memories in the collection at the start
};

/// Result of Db::embedding_status() (rm_embedding_info).
struct EmbeddingStatus : JsonRendering {
    EmbedState state = EmbedState::Unavailable;
    std::optional<std::string> model;        ///< this Db's model as "name/dim/hash"; nullopt when none is loaded
    std::size_t dim = 0;                     ///< vector dimension of this Db's model; 0 when none
    std::optional<std::string> stored_model; ///< model stamp of the vectors in the file; nullopt when none yet
    std::int64_t pending = 0;                ///< active memories without a vector (Db::reembed() embeds them)
    std::string kernel;                      ///< sqlite-vec kernel in use: "avx", "neon" or "portable"
    std::string reason;                      ///< why state is not Ready ("" when it is)
    std::string index_kernel;                ///< vector index scan kernel: "avx512-vnni", "avx2", "neon-dotprod", "neon" or "portable"
};

/// Result of Db::reembed() (rm_reembed_result).
/// Result of Db::purge() (rm_purge_result).
struct PurgeResult {
    std::uint64_t purged = 0;           ///< memories hard-deleted
    std::uint64_t batches = 0;          ///< write transactions (each at most 100 memories)
    std::uint64_t reclaimed_bytes = 0;  ///< free pages given back to the file system
    std::uint64_t live_bytes = 0;       ///< the file's live pages after, in bytes
};

struct ReembedResult {
    std::int64_t embedded = 0;   ///< memories embedded by this call
    std::int64_t remaining = 0;  ///< active memories still without a vector (call again while > 0)
    bool rebuilt = false;        ///< this call dropped another model's vectors to rebuild them
};

/// One version of a memory (rm_memory_version): what it said and was from
/// valid_from until valid_to, and the change that made it.
struct MemoryVersion {
    std::int64_t version = 0;           ///< the memory's version counter (grows with every change)
    std::string writer;                 ///< robot that wrote this version ("": this database's robot)
    std::string content;
    std::string context_json;
    std::string category;
    double confidence = 0.0;            ///< when it was replaced (the current one for the last version)
    MemoryStatus status = MemoryStatus::Active;
    std::int64_t superseded_by = 0;     ///< 0 if none
    std::optional<std::string> invalidated_reason;  ///< why it was forgotten; nullopt if it was not
    std::optional<std::string> expires_at;          ///< nullopt: never
    std::string valid_from;             ///< when it became the memory's state
    std::optional<std::string> valid_to;  ///< when the next version replaced it; nullopt: current
    /// What made it: "learn", "fleet", "import", "update", "forget",
    /// "consolidation", "expiry" or "sql" (a change made outside robotmem).
    std::string cause;
    std::string cause_writer;           ///< robot whose change made it ("": this database's robot)
};

/// Result of Db::history() (rm_history_result): oldest first, the current last.
struct History : JsonRendering {
    std::int64_t memory_id = 0;
    std::vector<MemoryVersion> versions;
};

/// Result of Db::end_session() (rm_session_summary).
struct SessionSummary : JsonRendering {
    std::string session_id;
    std::string collection;
    std::optional<double> outcome_score;
    std::int64_t memory_count = 0;  ///< memories stored in the session (any status)
    std::vector<std::pair<std::string, std::int64_t>> by_type;      ///< ("fact", 3), ...
    std::vector<std::pair<std::string, std::int64_t>> by_category;  ///< ("observation", 2), ...
    std::int64_t decayed_count = 0;  ///< memories whose confidence decay lowered in this call
    // Consolidation of the session's near-duplicate memories.
    std::int64_t merged_groups = 0;
    std::int64_t superseded_count = 0;
    double compression_ratio = 0.0;
    double avg_similarity = 0.0;
    std::vector<Hit> related;  ///< related memories from other sessions, best first
};

}  // namespace robotmem

#endif  // ROBOTMEM_TYPES_HPP
