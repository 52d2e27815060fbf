// robotmem C++17 wrapper: request options (open, learn, recall, perception) and
// the context_filter / spatial_sort JSON builders.
//
// Part of the header-only wrapper over the C ABI in <robotmem.h>; include
// <robotmem/robotmem.hpp> rather than this file.
//
// Option structs own their strings (std::string), so they never dangle and are
// already NUL-terminated when a call passes them to C: a call copies nothing.
// An empty string means "not set" (NULL in the C struct), which for these fields
// is what the library does with a blank value too. Unset numeric options
// (std::nullopt) take the library's defaults from the rm_*_options_init functions.
// An option struct may be reused for many calls and shared read-only by threads.
#ifndef ROBOTMEM_OPTIONS_HPP
#define ROBOTMEM_OPTIONS_HPP

#include <robotmem.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail.hpp"
#include "error.hpp"
#include "types.hpp"

namespace robotmem {

class Db;

/// Options of Db::open() (rm_open_options). Unset fields take the library defaults.
struct OpenOptions {
    /// Database file (UTF-8). nullopt: ~/.robotmem/memory.db (directory created 0700);
    /// ":memory:": a private in-memory database. New files are created 0600.
    std::optional<std::string> path;
    /// Collection used when a call passes none. nullopt: "default".
    std::optional<std::string> default_collection;
    /// Milliseconds to wait for another process's write lock. nullopt: 5000.
    std::optional<std::uint32_t> busy_timeout_ms;
    /// nullopt: Durability::Full (one fsync per commit; survives power cuts).
    std::optional<Durability> durability;
    /// RRF constant k of BM25-only ranking; hybrid recall fuses by score (README). nullopt: 60.
    std::optional<double> rrf_k;
    /// Per-day confidence decay given to new memories, 0-1. nullopt: 0.01.
    std::optional<double> decay_rate;
    /// Load the Chinese segmenter and build the search index in open() instead of
    /// at the first call that needs them. nullopt: false.
    std::optional<bool> preload;
    /// Largest database file in bytes; a write past it fails with Status::Full and
    /// changes nothing. nullopt or 0: no limit but the disk.
    std::optional<std::uint64_t> max_db_bytes;
    /// Check the whole file during open (SQLite quick_check) and refuse a damaged one
    /// with Status::Corrupt. Default false: damage is reported by the first read of it.
    std::optional<bool> verify;

    // Embeddings (vector search fused with BM25). A missing or broken model or
    // runtime never fails open(): the Db runs BM25 only and embedding_status() says why.

    /// Use an embedding model when one is available. false: BM25 only whatever the
    /// environment says. nullopt: true.
    std::optional<bool> embeddings;
    /// Model directory (model.onnx, tokenizer.json, robotmem-model.json). nullopt:
    /// $ROBOTMEM_MODEL_DIR; unset too: no model (BM25 only).
    std::optional<std::string> model_dir;
    /// ONNX Runtime shared library (libonnxruntime.so.1.x). nullopt:
    /// $ROBOTMEM_ORT_LIBRARY, else libonnxruntime.so next to librobotmem. The first
    /// runtime loaded in a process serves every Db of the process.
    std::optional<std::string> ort_library;
    /// ONNX Runtime threads per model run, 1-64. nullopt: 2.
    std::optional<std::uint32_t> embed_threads;
    /// Texts per model run in learn_batch() and reembed(), 1-1024. nullopt: 32.
    std::optional<std::uint32_t> embed_batch;
    /// Cosine similarity above which a new fact with the same numbers, outcome and
    /// words (up to inflection) as a stored one is its duplicate; above 1 turns the
    /// cosine layer off. nullopt: 0.85.
    std::optional<double> cosine_dedup;
    /// Open the file read-only: it must exist; nothing is written to it (no access
    /// counts, no index copies at close, no lock file); every write fails with
    /// Status::ReadOnly and recall records no access. Not with ":memory:". nullopt: false.
    std::optional<bool> read_only;
    /// Time to live, in seconds, of new memories per collection that give none:
    /// a JSON object {"obstacles": 600, "*": 86400}. nullopt: none expire unless asked.
    std::optional<std::string> default_ttl_json;
    /// Most memories the file holds, whatever their status (0 to RM_MAX_BUDGET). A
    /// write that would pass it first evicts others (expired, then forgotten or
    /// superseded, then lowest confidence x recency x access; never constraint,
    /// gotcha, postmortem unless evict_protected) and lists them in its result's
    /// `evicted`; when only protected memories could make room it fails with
    /// Status::OverBudget and changes nothing. nullopt / 0: no limit.
    std::optional<std::uint64_t> max_memories;
    /// The same per collection: a JSON object {"obstacles": 200, "*": 1000}. nullopt: none.
    std::optional<std::string> max_memories_json;
    /// Let eviction remove protected memories too. nullopt: false.
    std::optional<bool> evict_protected;
    /// Encryption key of the file, 32 bytes (a library built with encryption:
    /// encryption_available()). Wrong or missing for an encrypted file, or given for
    /// a plain one: Status::Key, the file untouched. docs/ENCRYPTION.md. nullopt: none.
    std::optional<std::array<std::uint8_t, 32>> key;
    /// A key file instead (32 bytes or 64 hex digits, mode 0600). nullopt: none.
    std::optional<std::string> key_file;
    /// The Db's clock instead of the system's (a simulation's, ROS 2 /clock, e.g.
    /// `[node] { return node->now().nanoseconds() / 1000000; }`): the current time
    /// in milliseconds since 1970-01-01T00:00:00Z. Every time robotmem stores or
    /// compares is read from it (creation, access, expiry and ttl, decay, eviction,
    /// purge ages, history, as_of). Called on the threads that use the Db,
    /// concurrently: it must be thread-safe and must not call the Db. An exception
    /// it throws, or a value below 0 or after 9999-12-31, is not a time: the system
    /// clock is read for that call. A copy is kept until the handle is closed (also
    /// after release()). Empty: the system clock (rm_open_options.clock).
    std::function<std::int64_t()> clock;

    /// Options for a private in-memory database (path ":memory:"). May throw std::bad_alloc.
    static OpenOptions in_memory() { return file(":memory:"); }
    /// Options for the database file `path`. May throw std::bad_alloc.
    static OpenOptions file(std::string path) {
        OpenOptions o;
        o.path = std::move(path);
        return o;
    }
};

/// Options of Db::learn() (rm_learn_options). Empty strings mean "not set".
struct LearnOptions {
    /// A JSON object (params / spatial / robot / task / env ...) or free text
    /// (kept as "user_context"), at most 64 KiB. Text starting with '{' or '['
    /// must be valid JSON.
    std::string context;
    /// Collection (namespace). Empty: the Db's default collection.
    std::string collection;
    /// Session from Db::start_session(). Empty: none.
    std::string session_id;
    /// User tags, normalised by the library ("Robot Arm" -> "robot_arm"); at most
    /// 20 of 1-64 characters; kept when the memory is updated.
    std::vector<std::string> tags;
    /// Time to live in seconds (> 0, at most 100 years): the memory leaves recall,
    /// listings and dedup then. 0: not set.
    double ttl_seconds = 0.0;
    /// Or when it expires, RFC 3339 ("2026-12-01T18:00:00Z"). Empty: not set.
    /// Neither set: the collection's default (OpenOptions::default_ttl_json).
    std::string expires_at;
};

/// One experience of Db::learn_batch() (rm_learn_item): the insight and its options,
/// as for Db::learn().
struct LearnItem {
    /// As Db::learn()'s insight (1-300 characters after trimming).
    std::string insight;
    /// As Db::learn()'s options.
    LearnOptions opts;

    LearnItem() = default;
    /// An item, so a batch can be written {{"first insight"}, {"second", opts}}.
    /// May throw std::bad_alloc.
    LearnItem(std::string text, LearnOptions options = {})  // NOLINT: implicit on purpose
        : insight(std::move(text)), opts(std::move(options)) {}
};

/// Comparison operator of a context_filter condition.
enum class Op { Eq, Ne, Lt, Lte, Gt, Gte };

/// The JSON operator name: "$eq", "$ne", "$lt", "$lte", "$gt", "$gte".
inline const char* to_string(Op op) noexcept {
    switch (op) {
    case Op::Eq: return "$eq";
    case Op::Ne: return "$ne";
    case Op::Lt: return "$lt";
    case Op::Lte: return "$lte";
    case Op::Gt: return "$gt";
    case Op::Gte: return "$gte";
    }
    return "$eq";
}

/// A scalar compared by a context_filter condition: null, a bool, an integer, a
/// floating-point number or a string. Implicitly constructible from each, so
/// filter("task.name", Op::Eq, "grasp") and filter("x", Op::Lt, 15.0) just work.
/// A string literal is a string (never a bool). Strings are JSON-escaped when the
/// filter is rendered (quotes, backslashes, control characters, NUL as \u0000);
/// numbers must be finite (NaN and infinities fail with Status::InvalidArgument
/// when the filter is rendered).
class FilterValue {
public:
    /// JSON null.
    FilterValue(std::nullptr_t) noexcept : kind_(Kind::Null) {}
    /// JSON true / false.
    FilterValue(bool v) noexcept : kind_(Kind::Bool), b_(v) {}
    /// Any integer type but the character types.
    template <class I,
              std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value &&
                                   !std::is_same<I, char>::value && !std::is_same<I, wchar_t>::value &&
                                   !std::is_same<I, char16_t>::value && !std::is_same<I, char32_t>::value,
                               int> = 0>
    FilterValue(I v) noexcept {
        if (std::is_signed<I>::value) {
            kind_ = Kind::Int;
            i_ = static_cast<std::int64_t>(v);
        } else {
            kind_ = Kind::Uint;
            u_ = static_cast<std::uint64_t>(v);
        }
    }
    /// float, double, long double (rendered as a double).
    template <class F, std::enable_if_t<std::is_floating_point<F>::value, int> = 0>
    FilterValue(F v) noexcept : kind_(Kind::Double), d_(static_cast<double>(v)) {}
    /// A string (NUL-terminated; use std::string_view for text holding NUL bytes).
    /// May throw std::bad_alloc.
    FilterValue(const char* s) : kind_(Kind::String), s_(s ? s : "") {}
    /// A string, copied. May throw std::bad_alloc.
    FilterValue(std::string_view s) : kind_(Kind::String), s_(s) {}
    /// A string. May throw std::bad_alloc.
    FilterValue(std::string s) noexcept : kind_(Kind::String), s_(std::move(s)) {}

    /// Appends the JSON text of the value; false (nothing appended) for a
    /// non-finite number. May throw std::bad_alloc.
    bool append_json(std::string& out) const {
        switch (kind_) {
        case Kind::Null: out.append("null"); return true;
        case Kind::Bool: out.append(b_ ? "true" : "false"); return true;
        case Kind::Int: detail::append_json_integer(out, i_); return true;
        case Kind::Uint: detail::append_json_integer(out, u_); return true;
        case Kind::Double: return detail::append_json_number(out, d_);
        case Kind::String: detail::append_json_string(out, s_); return true;
        }
        return false;
    }

private:
    enum class Kind { Null, Bool, Int, Uint, Double, String };
    Kind kind_;
    bool b_ = false;
    std::int64_t i_ = 0;
    std::uint64_t u_ = 0;
    double d_ = 0.0;
    std::string s_;
};

/// Options of Db::recall() (rm_recall_options).
///
/// Filters are built with filter_eq() / filter() / spatial(), which record the
/// conditions; the JSON text is rendered (correctly escaped, no JSON library
/// needed) when the options are used, or with render_context_filter() /
/// render_spatial_sort(). Raw JSON can be set instead with context_filter_json()
/// / spatial_sort_json(). Builders chain, on variables and on temporaries:
///
///     auto o = robotmem::RecallOptions()
///                  .filter_eq("task.success", true)
///                  .filter("params.force.value", robotmem::Op::Lt, 15.0)
///                  .spatial("spatial.object_position", {0.1, 0.2, 0.3}, 0.5);
///     o.n = 10;
class RecallOptions {
public:
    /// Collection to search. Empty: the Db's default collection.
    std::string collection;
    /// Number of results, clamped by the library to 1-100. nullopt: 5.
    std::optional<int> n;
    /// Minimum confidence, 0-1. nullopt: 0.3.
    std::optional<double> min_confidence;
    /// Only memories of this session (episode replay). Empty: all.
    std::string session_id;
    /// Fold results that say the same thing (word sets alike, same outcome; numbers
    /// may differ) into the best-ranked of them; each Hit::similar then lists the
    /// ids it stands for, and n hits are n different facts. Default false.
    bool group_similar = false;

    /// Adds the condition "the context value at dot path `path` equals `value`"
    /// (numbers compare by value, 1 == 1.0). Conditions are AND-ed; the library
    /// accepts at most 10 distinct paths. Adding the same operator on the same
    /// path again replaces its value. May throw std::bad_alloc.
    RecallOptions& filter_eq(std::string_view path, FilterValue value) & {
        return filter(path, Op::Eq, std::move(value));
    }
    /// As above, on a temporary (returns it by value, moved).
    RecallOptions filter_eq(std::string_view path, FilterValue value) && {
        filter(path, Op::Eq, std::move(value));
        return std::move(*this);
    }
    /// Adds the condition "context value at `path` <op> `value`". Lt/Lte/Gt/Gte
    /// compare numbers with numbers and strings with strings; a memory whose
    /// context lacks the path never matches. Several operators on one path are
    /// rendered as one object ({"$gte": 12, "$lt": 14}). May throw std::bad_alloc.
    RecallOptions& filter(std::string_view path, Op op, FilterValue value) & {
        for (auto& c : conditions_) {
            if (c.op == op && c.path == path) {
                c.value = std::move(value);
                return *this;
            }
        }
        conditions_.push_back(Condition{std::string(path), op, std::move(value)});
        return *this;
    }
    /// As above, on a temporary.
    RecallOptions filter(std::string_view path, Op op, FilterValue value) && {
        filter(path, op, std::move(value));
        return std::move(*this);
    }
    /// Sorts nearest first by Euclidean distance between the coordinate array at
    /// dot path `field` and `target`; with `max_distance`, farther memories are
    /// dropped. Replaces any previous spatial sort (built or raw). Coordinates
    /// must be finite. May throw std::bad_alloc.
    RecallOptions& spatial(std::string_view field, std::vector<double> target,
                           std::optional<double> max_distance = std::nullopt) & {
        spatial_ = Spatial{std::string(field), std::move(target), max_distance};
        raw_spatial_.clear();
        return *this;
    }
    /// As above, on a temporary.
    RecallOptions spatial(std::string_view field, std::vector<double> target,
                          std::optional<double> max_distance = std::nullopt) && {
        spatial(field, std::move(target), max_distance);
        return std::move(*this);
    }
    /// Sets the context_filter as raw JSON text, passed to the library unchanged
    /// ("" removes it). Cannot be combined with filter_eq() / filter() conditions
    /// (the call fails with Status::InvalidArgument). May throw std::bad_alloc.
    RecallOptions& context_filter_json(std::string_view json) & {
        raw_filter_.assign(json.data(), json.size());
        return *this;
    }
    /// As above, on a temporary.
    RecallOptions context_filter_json(std::string_view json) && {
        context_filter_json(json);
        return std::move(*this);
    }
    /// Sets the spatial_sort as raw JSON text, passed unchanged ("" removes it).
    /// Replaces a spatial() sort. May throw std::bad_alloc.
    RecallOptions& spatial_sort_json(std::string_view json) & {
        raw_spatial_.assign(json.data(), json.size());
        spatial_.reset();
        return *this;
    }
    /// As above, on a temporary.
    RecallOptions spatial_sort_json(std::string_view json) && {
        spatial_sort_json(json);
        return std::move(*this);
    }
    /// Removes every context_filter condition and the raw context_filter.
    RecallOptions& clear_context_filter() & noexcept {
        conditions_.clear();
        raw_filter_.clear();
        return *this;
    }
    /// Removes the spatial sort.
    RecallOptions& clear_spatial_sort() & noexcept {
        spatial_.reset();
        raw_spatial_.clear();
        return *this;
    }

    /// True when a context_filter (conditions or raw JSON) is set.
    bool has_context_filter() const noexcept { return !conditions_.empty() || !raw_filter_.empty(); }
    /// True when a spatial sort (built or raw JSON) is set.
    bool has_spatial_sort() const noexcept { return spatial_.has_value() || !raw_spatial_.empty(); }

    /// The context_filter JSON the library will receive ("" when none).
    /// Throws robotmem::Error(Status::InvalidArgument) for a non-finite number or
    /// raw JSON combined with conditions.
    std::string render_context_filter() const {
        std::string out;
        detail::Failure f;
        if (!render_filter_into(out, f)) detail::raise(f.status, f.message);
        return out;
    }
    /// The spatial_sort JSON the library will receive ("" when none).
    /// Throws robotmem::Error(Status::InvalidArgument) for a non-finite coordinate
    /// or max_distance.
    std::string render_spatial_sort() const {
        std::string out;
        detail::Failure f;
        if (!render_spatial_into(out, f)) detail::raise(f.status, f.message);
        return out;
    }

private:
    friend class Db;

    struct Condition {
        std::string path;
        Op op;
        FilterValue value;
    };
    struct Spatial {
        std::string field;
        std::vector<double> target;
        std::optional<double> max_distance;
    };

    // Renders into `out` (cleared first). Throws std::bad_alloc only.
    bool render_filter_into(std::string& out, detail::Failure& f) const {
        out.clear();
        if (conditions_.empty()) {
            out = raw_filter_;
            return true;
        }
        if (!raw_filter_.empty())
            return f.set(Status::InvalidArgument,
                         "opts.context_filter: raw JSON (context_filter_json) cannot be combined with "
                         "filter_eq()/filter() conditions");
        out.push_back('{');
        for (std::size_t i = 0; i < conditions_.size(); ++i) {
            const std::string& path = conditions_[i].path;
            bool seen = false;  // rendered with an earlier condition on the same path
            for (std::size_t j = 0; j < i && !seen; ++j) seen = conditions_[j].path == path;
            if (seen) continue;
            std::size_t count = 0;
            for (std::size_t j = i; j < conditions_.size(); ++j) count += conditions_[j].path == path;
            if (out.size() > 1) out.append(", ");
            detail::append_json_string(out, path);
            out.append(": ");
            const bool plain = count == 1 && conditions_[i].op == Op::Eq;
            if (!plain) out.push_back('{');
            bool first = true;
            for (std::size_t j = i; j < conditions_.size(); ++j) {
                const Condition& c = conditions_[j];
                if (c.path != path) continue;
                if (!plain) {
                    if (!first) out.append(", ");
                    first = false;
                    out.push_back('"');
                    out.append(to_string(c.op));
                    out.append("\": ");
                }
                if (!c.value.append_json(out))
                    return f.set(Status::InvalidArgument, "opts.context_filter: the value for \"" + path +
                                                              "\" is not a finite number");
            }
            if (!plain) out.push_back('}');
        }
        out.push_back('}');
        return true;
    }

    bool render_spatial_into(std::string& out, detail::Failure& f) const {
        out.clear();
        if (!spatial_) {
            out = raw_spatial_;
            return true;
        }
        out.append("{\"field\": ");
        detail::append_json_string(out, spatial_->field);
        out.append(", \"target\": [");
        for (std::size_t i = 0; i < spatial_->target.size(); ++i) {
            if (i) out.append(", ");
            if (!detail::append_json_number(out, spatial_->target[i]))
                return f.set(Status::InvalidArgument,
                             "opts.spatial_sort: target[" + std::to_string(i) + "] is not a finite number");
        }
        out.push_back(']');
        if (spatial_->max_distance) {
            out.append(", \"max_distance\": ");
            if (!detail::append_json_number(out, *spatial_->max_distance))
                return f.set(Status::InvalidArgument, "opts.spatial_sort: max_distance is not a finite number");
        }
        out.push_back('}');
        return true;
    }

    std::vector<Condition> conditions_;
    std::string raw_filter_;
    std::optional<Spatial> spatial_;
    std::string raw_spatial_;
};

/// Options of Db::save_perception() (rm_perception_options). Empty strings mean
/// "not set".
class PerceptionOptions {
public:
    /// nullopt: PerceptionType::Visual. PerceptionType::None is invalid here.
    std::optional<PerceptionType> type;
    /// Sensor data, stored byte for byte (JSON text or binary; NUL bytes are
    /// fine), at most 4 MiB. Empty: none. See also data_view().
    std::vector<std::uint8_t> data;
    /// JSON metadata (format, units, rate), at most 64 KiB.
    std::string metadata;
    /// Context JSON object, as for LearnOptions::context.
    std::string context;
    /// Collection. Empty: the Db's default collection.
    std::string collection;
    /// Session from Db::start_session(). Empty: none.
    std::string session_id;
    /// User tags, as for LearnOptions::tags.
    std::vector<std::string> tags;
    /// Expiry, as for LearnOptions (0 / empty: not set).
    double ttl_seconds = 0.0;
    std::string expires_at;

    /// Uses `size` bytes at `bytes` as the data without copying them: they must
    /// stay valid until the save_perception() call using these options returns.
    /// Cannot be combined with a non-empty `data` (the call fails with
    /// Status::InvalidArgument). data_view(nullptr, 0) removes the view.
    PerceptionOptions& data_view(const void* bytes, std::size_t size) & noexcept {
        view_ = static_cast<const std::uint8_t*>(bytes);
        view_size_ = size;
        return *this;
    }
    /// As above, on a temporary.
    PerceptionOptions data_view(const void* bytes, std::size_t size) && noexcept {
        data_view(bytes, size);
        return std::move(*this);
    }
    /// Copies text (e.g. a JSON trajectory) into `data`. May throw std::bad_alloc.
    PerceptionOptions& data_text(std::string_view text) & {
        data.assign(text.begin(), text.end());
        return *this;
    }
    /// As above, on a temporary.
    PerceptionOptions data_text(std::string_view text) && {
        data_text(text);
        return std::move(*this);
    }

private:
    friend class Db;
    const std::uint8_t* view_ = nullptr;
    std::size_t view_size_ = 0;
};

}  // namespace robotmem

#endif  // ROBOTMEM_OPTIONS_HPP
