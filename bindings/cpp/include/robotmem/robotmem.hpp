// robotmem — long-term memory engine for robots. Header-only C++17 wrapper over
// the C ABI in <robotmem.h> (link robotmem::cpp with CMake, or librobotmem).
//
//     #include <robotmem/robotmem.hpp>
//
//     auto db = robotmem::Db::open(robotmem::OpenOptions::file("/var/lib/robot/memory.db"));
//     robotmem::LearnOptions lo;
//     lo.context = R"({"params": {"force": {"value": 12.5}}, "task": {"success": true}})";
//     auto learned = db.learn("grasp of red mug succeeded at 12.5N", lo);
//     auto hits = db.recall("grasp mug", robotmem::RecallOptions()
//                                            .filter_eq("task.success", true)
//                                            .filter("params.force.value", robotmem::Op::Lt, 15.0));
//     for (const auto& h : hits.hits) std::cout << h.score << "  " << h.memory.content << "\n";
//
// Conventions of every Db operation:
//  - Errors: the plain method throws robotmem::Error (status code() + the message
//    of rm_last_error(), copied at once); its try_* twin is noexcept and returns a
//    robotmem::Result<T> holding the value or the status and message. Both report
//    exactly the same statuses. A try_* call that runs out of memory while copying
//    a result returns Status::Internal (the throwing method lets std::bad_alloc
//    through). Neither variant is allocation-free: results are owning copies.
//    With -fno-exceptions the try_* methods are the API (see error.hpp).
//  - Inputs are std::string_view. They are copied into NUL-terminated buffers
//    (short ones on the stack), so they need not be NUL-terminated; a view holding
//    a NUL byte fails with Status::InvalidArgument naming the field, never a
//    silently truncated string.
//  - Results are owning value types (see types.hpp): the C result is copied and
//    freed before the call returns. Pass Json::Render to also get the library's
//    JSON rendering of the same result (result.to_json()).
//  - Thread-safety: see class Db.
//
// Embeddings: with a model (OpenOptions::model_dir / ort_library, or the
// ROBOTMEM_MODEL_DIR / ROBOTMEM_ORT_LIBRARY environment) recall fuses BM25 with
// vector similarity (RecallResult::mode); without one the Db runs BM25 only.
// embedding_status() says which and why, reembed() embeds what was learned
// without a model, learn_batch() stores many experiences in one commit.
#ifndef ROBOTMEM_HPP
#define ROBOTMEM_HPP

#include <robotmem.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "detail.hpp"
#include "error.hpp"
#include "options.hpp"
#include "types.hpp"

namespace robotmem {

/// An open robotmem database: RAII owner of one rm_db handle.
///
/// Move-only: copying is deleted; a moved-from Db is empty (is_open() false), safe
/// to destroy or assign to, and its operations fail with Status::Closed. Move
/// assignment closes the handle the target held. The destructor closes the handle
/// (rm_close: pending access counters are written) and never throws.
///
/// Thread-safety: one Db may be used by any number of threads at once — e.g. the
/// threads of a ROS 2 multi-threaded executor — without any locking of yours: the
/// C handle is internally synchronised, and recall never waits for writers. All
/// operations are const member functions for that reason (a const Db& is a full,
/// shareable handle; const does not mean the database is read-only). close() may
/// also race with them: calls in flight finish, later ones fail with
/// Status::Closed. Only move-assignment, release() and destruction must not run
/// concurrently with other use of the same Db object. Several Db objects (in one
/// or several processes) may open the same file.
class Db {
public:
    /// An empty Db (not open). Every operation fails with Status::Closed.
    Db() noexcept = default;

    /// Takes ownership of a handle returned by rm_open() (NULL gives an empty Db).
    explicit Db(rm_db* owned) noexcept : db_(owned) {}

    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    /// Takes the other's handle; `other` becomes empty.
    Db(Db&& other) noexcept : db_(other.db_.exchange(nullptr)) {}

    /// Closes the handle this Db holds (errors ignored), then takes the other's.
    /// Self-move-assignment does nothing.
    Db& operator=(Db&& other) noexcept {
        if (this != &other) {
            rm_db* old = db_.exchange(other.db_.exchange(nullptr));
            if (old) rm_close(old);
        }
        return *this;
    }

    /// Closes the handle, if any (rm_close; its status is ignored). Never throws.
    ~Db() {
        if (rm_db* h = db_.exchange(nullptr)) rm_close(h);
    }

    /// Opens (creating if needed) a database (rm_open).
    /// Throws Error: InvalidArgument (bad option, NUL byte in a string), Io (cannot
    /// create or open the file or its directory), Corrupt (not a robotmem database;
    /// the file is left unmodified), SchemaTooNew, Busy. Thread-safe.
    static Db open(const OpenOptions& opts = {}) {
        return detail::run<Db>([&](Db& out, detail::Failure& f) { return open_into(opts, out, f); });
    }
    /// Non-throwing open(): the same statuses in a Result<Db>. Thread-safe.
    static Result<Db> try_open(const OpenOptions& opts = {}) noexcept {
        return detail::try_run<Db>([&](Db& out, detail::Failure& f) { return open_into(opts, out, f); });
    }

    /// True while this Db holds a handle (not closed, moved-from or released).
    bool is_open() const noexcept { return db_.load(std::memory_order_acquire) != nullptr; }
    /// Same as is_open().
    explicit operator bool() const noexcept { return is_open(); }

    /// The C handle, for calls into <robotmem.h>; NULL when not open. Ownership
    /// stays with this Db: do not rm_close() it.
    rm_db* handle() const noexcept { return db_.load(std::memory_order_acquire); }

    /// Gives up ownership: returns the handle (NULL when not open) and leaves this
    /// Db empty. The caller must rm_close() the handle.
    rm_db* release() noexcept { return db_.exchange(nullptr); }

    /// Closes the handle now (rm_close: pending access counters are written);
    /// the Db becomes empty. Closing an empty Db does nothing.
    /// Throws Error(Closed) if the handle was already closed through the C API.
    void close() { try_close().value(); }
    /// Non-throwing close(). noexcept.
    Result<void> try_close() noexcept {
        rm_db* h = db_.exchange(nullptr);
        if (!h) return Result<void>();
        const rm_status st = rm_close(h);
        if (st != RM_OK) return Result<void>(static_cast<Status>(st), detail::safe_string(rm_last_error()));
        return Result<void>();
    }

    /// Writes pending access counters (recall hits) to the file now (rm_flush).
    /// Throws Error: Closed, Busy, Io, Full. Thread-safe.
    void flush() const { try_flush().value(); }
    /// Non-throwing flush(). Thread-safe, noexcept.
    Result<void> try_flush() const noexcept {
        rm_db* h = handle();
        if (!h) return Result<void>(Status::Closed, detail::safe_string(not_open_message()));
        const rm_status st = rm_flush(h);
        if (st != RM_OK) return Result<void>(static_cast<Status>(st), detail::safe_string(rm_last_error()));
        return Result<void>();
    }

    /// Stores an experience (rm_learn): `insight` (1-300 characters after
    /// trimming) is classified and checked for duplicates in its collection; a
    /// duplicate is not stored again (result.duplicate, the existing memory_id).
    /// Throws Error: InvalidArgument (blank/oversize insight — the message names
    /// "insight" —, NUL byte, invalid UTF-8, malformed or oversize context, bad
    /// tags), NotFound (unknown session_id), InvalidState (session ended), Closed,
    /// Busy, Full, Io. Thread-safe.
    LearnResult learn(std::string_view insight, const LearnOptions& opts = {}, Json json = Json::Skip) const {
        return detail::run<LearnResult>(
            [&](LearnResult& out, detail::Failure& f) { return learn_into(insight, opts, json, out, f); });
    }
    /// Non-throwing learn(). Thread-safe, noexcept.
    Result<LearnResult> try_learn(std::string_view insight, const LearnOptions& opts = {},
                                  Json json = Json::Skip) const noexcept {
        return detail::try_run<LearnResult>(
            [&](LearnResult& out, detail::Failure& f) { return learn_into(insight, opts, json, out, f); });
    }

    /// The memories most relevant to `query` (rm_recall; 1-1000 characters; "*"
    /// lists the newest), after the filters of `opts`. Filters are exact: when n
    /// memories match the query and every filter, n are returned. Never waits
    /// for writers.
    /// Throws Error: InvalidArgument (blank/oversize query, NUL byte, min_confidence
    /// outside 0-1, malformed or non-finite filter, > 10 filter paths, raw JSON
    /// combined with conditions), Closed, Io, Corrupt. Thread-safe.
    RecallResult recall(std::string_view query, const RecallOptions& opts = {}, Json json = Json::Skip) const {
        return detail::run<RecallResult>(
            [&](RecallResult& out, detail::Failure& f) { return recall_into(query, opts, json, out, f); });
    }
    /// Non-throwing recall(). Thread-safe, noexcept.
    Result<RecallResult> try_recall(std::string_view query, const RecallOptions& opts = {},
                                    Json json = Json::Skip) const noexcept {
        return detail::try_run<RecallResult>(
            [&](RecallResult& out, detail::Failure& f) { return recall_into(query, opts, json, out, f); });
    }

    /// Stores perception / trajectory / force data with a `description` (5-300
    /// characters after trimming) (rm_save_perception). The same description,
    /// type, data and metadata already stored is reported as a duplicate.
    /// Throws Error: InvalidArgument (short/blank/oversize description, NUL byte,
    /// type None, data > 4 MiB, metadata not JSON, data and data_view both set),
    /// NotFound (unknown session), InvalidState (session ended), Closed, Busy,
    /// Full, Io. Thread-safe.
    PerceptionResult save_perception(std::string_view description, const PerceptionOptions& opts = {},
                                     Json json = Json::Skip) const {
        return detail::run<PerceptionResult>([&](PerceptionResult& out, detail::Failure& f) {
            return perception_into(description, opts, json, out, f);
        });
    }
    /// Non-throwing save_perception(). Thread-safe, noexcept.
    Result<PerceptionResult> try_save_perception(std::string_view description, const PerceptionOptions& opts = {},
                                                 Json json = Json::Skip) const noexcept {
        return detail::try_run<PerceptionResult>([&](PerceptionResult& out, detail::Failure& f) {
            return perception_into(description, opts, json, out, f);
        });
    }

    /// One memory by id, whatever its status, with its tags (rm_get_memory).
    /// Throws Error: InvalidArgument (id <= 0), NotFound, Closed. Thread-safe.
    MemoryResult get_memory(std::int64_t memory_id, Json json = Json::Skip) const {
        return detail::run<MemoryResult>(
            [&](MemoryResult& out, detail::Failure& f) { return get_into(memory_id, json, out, f); });
    }
    /// Non-throwing get_memory(). Thread-safe, noexcept.
    Result<MemoryResult> try_get_memory(std::int64_t memory_id, Json json = Json::Skip) const noexcept {
        return detail::try_run<MemoryResult>(
            [&](MemoryResult& out, detail::Failure& f) { return get_into(memory_id, json, out, f); });
    }

    /// Forgets a memory (rm_forget; soft delete: the row stays for audit, the
    /// memory leaves every search). `reason` is required (1-500 characters).
    /// Throws Error: InvalidArgument (id <= 0, blank reason, NUL byte), NotFound,
    /// InvalidState (already forgotten or superseded), Closed, Busy, Full. Thread-safe.
    ForgetResult forget(std::int64_t memory_id, std::string_view reason, Json json = Json::Skip) const {
        return detail::run<ForgetResult>(
            [&](ForgetResult& out, detail::Failure& f) { return forget_into(memory_id, reason, json, out, f); });
    }
    /// Non-throwing forget(). Thread-safe, noexcept.
    Result<ForgetResult> try_forget(std::int64_t memory_id, std::string_view reason,
                                    Json json = Json::Skip) const noexcept {
        return detail::try_run<ForgetResult>(
            [&](ForgetResult& out, detail::Failure& f) { return forget_into(memory_id, reason, json, out, f); });
    }

    /// Sets when an active memory expires (rm_set_expiry): `ttl_seconds` from now
    /// (> 0), or at `expires_at` (RFC 3339; a past time expires it at once); both
    /// 0 / empty: it never expires. Renews an expired memory.
    /// Throws Error: InvalidArgument (bad ttl or time, both given, NUL byte),
    /// NotFound, InvalidState (forgotten or superseded), ReadOnly, Closed, Busy, Full.
    /// Thread-safe.
    void set_expiry(std::int64_t memory_id, double ttl_seconds, std::string_view expires_at = {}) const {
        detail::run<bool>([&](bool& out, detail::Failure& f) {
            return set_expiry_into(memory_id, ttl_seconds, expires_at, out, f);
        });
    }
    /// Non-throwing set_expiry(). Thread-safe, noexcept.
    Result<void> try_set_expiry(std::int64_t memory_id, double ttl_seconds,
                                std::string_view expires_at = {}) const noexcept {
        const Result<bool> r = detail::try_run<bool>([&](bool& out, detail::Failure& f) {
            return set_expiry_into(memory_id, ttl_seconds, expires_at, out, f);
        });
        if (!r) return Result<void>(r.status(), r.message());
        return Result<void>();
    }

    /// Re-encrypts the file with a new key (rm_rekey); the Db must be the file's only
    /// user. Throws Error: Busy (another handle or process has it open), InvalidArgument
    /// (not opened with a key, no encryption built in), ReadOnly, Closed, Io. Thread-safe.
    void rekey(const std::array<std::uint8_t, 32>& key) const {
        detail::run<bool>([&](bool& out, detail::Failure& f) { return rekey_into(key, out, f); });
    }
    /// Non-throwing rekey(). Thread-safe, noexcept.
    Result<void> try_rekey(const std::array<std::uint8_t, 32>& key) const noexcept {
        const Result<bool> r = detail::try_run<bool>([&](bool& out, detail::Failure& f) { return rekey_into(key, out, f); });
        return r ? Result<void>() : Result<void>(r.status(), r.message());
    }

    /// Replaces an active memory's content (rm_update; 1-300 characters after
    /// trimming) and, when `context` is set, its context ("" clears it); nullopt
    /// keeps the current context. Re-classified, re-hashed, re-indexed; automatic
    /// tags replaced, user tags kept.
    /// Throws Error: InvalidArgument, NotFound, InvalidState (forgotten or
    /// superseded), Duplicate (another active memory of the collection has exactly
    /// this content; nothing changed), Closed, Busy, Full. Thread-safe.
    UpdateResult update(std::int64_t memory_id, std::string_view new_content,
                        std::optional<std::string_view> context = std::nullopt, Json json = Json::Skip) const {
        return detail::run<UpdateResult>([&](UpdateResult& out, detail::Failure& f) {
            return update_into(memory_id, new_content, context, json, out, f);
        });
    }
    /// Non-throwing update(). Thread-safe, noexcept.
    Result<UpdateResult> try_update(std::int64_t memory_id, std::string_view new_content,
                                    std::optional<std::string_view> context = std::nullopt,
                                    Json json = Json::Skip) const noexcept {
        return detail::try_run<UpdateResult>([&](UpdateResult& out, detail::Failure& f) {
            return update_into(memory_id, new_content, context, json, out, f);
        });
    }

    /// Begins an episode (rm_start_session) in `collection` (empty: the default)
    /// with an optional context JSON (robot, environment, task; at most 64 KiB).
    /// Throws Error: InvalidArgument (oversize or malformed context, NUL byte),
    /// Closed, Busy, Full. Thread-safe.
    Session start_session(std::string_view collection = {}, std::string_view context = {},
                          Json json = Json::Skip) const {
        return detail::run<Session>(
            [&](Session& out, detail::Failure& f) { return start_into(collection, context, json, out, f); });
    }
    /// Non-throwing start_session(). Thread-safe, noexcept.
    Result<Session> try_start_session(std::string_view collection = {}, std::string_view context = {},
                                      Json json = Json::Skip) const noexcept {
        return detail::try_run<Session>(
            [&](Session& out, detail::Failure& f) { return start_into(collection, context, json, out, f); });
    }

    /// Ends an episode (rm_end_session): stores the outcome score (0-1; nullopt:
    /// none), applies time decay, consolidates the session's near-duplicates and
    /// returns a summary with related memories from other sessions.
    /// Throws Error: InvalidArgument (blank session_id, score outside 0-1 or NaN,
    /// NUL byte), NotFound (unknown session), InvalidState (already ended), Closed,
    /// Busy, Full. Thread-safe.
    SessionSummary end_session(std::string_view session_id, std::optional<double> outcome_score = std::nullopt,
                               Json json = Json::Skip) const {
        return detail::run<SessionSummary>([&](SessionSummary& out, detail::Failure& f) {
            return end_into(session_id, outcome_score, json, out, f);
        });
    }
    /// Non-throwing end_session(). Thread-safe, noexcept.
    Result<SessionSummary> try_end_session(std::string_view session_id,
                                           std::optional<double> outcome_score = std::nullopt,
                                           Json json = Json::Skip) const noexcept {
        return detail::try_run<SessionSummary>([&](SessionSummary& out, detail::Failure& f) {
            return end_into(session_id, outcome_score, json, out, f);
        });
    }

    /// Whether vector search works on this Db (rm_embedding_status): the state,
    /// this Db's model and the model that made the stored vectors, how many
    /// memories wait for a vector, the sqlite-vec kernel, and why the state is
    /// not Ready (reason).
    /// Throws Error: Closed, Io. Thread-safe.
    EmbeddingStatus embedding_status(Json json = Json::Skip) const {
        return detail::run<EmbeddingStatus>(
            [&](EmbeddingStatus& out, detail::Failure& f) { return status_into(json, out, f); });
    }
    /// Non-throwing embedding_status(). Thread-safe, noexcept.
    Result<EmbeddingStatus> try_embedding_status(Json json = Json::Skip) const noexcept {
        return detail::try_run<EmbeddingStatus>(
            [&](EmbeddingStatus& out, detail::Failure& f) { return status_into(json, out, f); });
    }

    /// Embeds active memories that have no vector of this Db's model (rm_reembed):
    /// those learned while no model was available, or all of them after a model
    /// change (the old vectors are dropped first; result.rebuilt). At most `limit`
    /// per call (0: all), in short write transactions, so other threads and
    /// processes keep working; call again while result.remaining > 0.
    /// Throws Error: EmbeddingUnavailable (no model on this Db; see
    /// embedding_status()), InvalidState (another process changed the model
    /// meanwhile), Closed, Busy, Full, Io. Thread-safe.
    ReembedResult reembed(std::size_t limit = 0) const {
        return detail::run<ReembedResult>(
            [&](ReembedResult& out, detail::Failure& f) { return reembed_into(limit, out, f); });
    }
    /// Non-throwing reembed(). Thread-safe, noexcept.
    Result<ReembedResult> try_reembed(std::size_t limit = 0) const noexcept {
        return detail::try_run<ReembedResult>(
            [&](ReembedResult& out, detail::Failure& f) { return reembed_into(limit, out, f); });
    }

    /// Hard-deletes the memories forgotten or superseded at least
    /// `older_than_seconds` ago and those expired that long ago (rm_purge), in
    /// transactions of at most 100, then gives the freed pages back to the file
    /// system. Recall never waits for it. Throws Error: InvalidArgument (negative,
    /// not finite, over 100 years), ReadOnly, Closed, Busy, Full, Io. Thread-safe.
    PurgeResult purge(double older_than_seconds) const {
        return detail::run<PurgeResult>(
            [&](PurgeResult& out, detail::Failure& f) { return purge_into(older_than_seconds, out, f); });
    }
    /// Non-throwing purge(). Thread-safe, noexcept.
    Result<PurgeResult> try_purge(double older_than_seconds) const noexcept {
        return detail::try_run<PurgeResult>(
            [&](PurgeResult& out, detail::Failure& f) { return purge_into(older_than_seconds, out, f); });
    }

    /// Stores many experiences at once (rm_learn_batch): every item is validated
    /// first, the texts are embedded in batches, and all items are written in one
    /// transaction (one commit). Each item is deduplicated as by learn() against
    /// the database and the items before it. Returns one LearnResult per item, in
    /// item order (without JSON: use learn() for a result's JSON).
    /// Throws Error: as learn(); for a bad item (or a NUL byte in one of its
    /// strings) InvalidArgument with a message starting "items[<index>]: ", and
    /// nothing is stored; InvalidArgument for more than RM_MAX_BATCH (10000) items.
    /// Thread-safe.
    std::vector<LearnResult> learn_batch(const std::vector<LearnItem>& items) const {
        return detail::run<std::vector<LearnResult>>(
            [&](std::vector<LearnResult>& out, detail::Failure& f) { return batch_into(items, out, f); });
    }
    /// Non-throwing learn_batch(). Thread-safe, noexcept.
    Result<std::vector<LearnResult>> try_learn_batch(const std::vector<LearnItem>& items) const noexcept {
        return detail::try_run<std::vector<LearnResult>>(
            [&](std::vector<LearnResult>& out, detail::Failure& f) { return batch_into(items, out, f); });
    }

    /// Every version of a memory, oldest first, the current last (rm_memory_history):
    /// what it said and was, from when to when, and which change (update, forget,
    /// consolidation, expiry, the fleet, an import) made it.
    /// Throws Error: InvalidArgument (id <= 0), NotFound, Closed. Thread-safe.
    History history(std::int64_t memory_id, Json json = Json::Skip) const {
        return detail::run<History>(
            [&](History& out, detail::Failure& f) { return history_into(memory_id, json, out, f); });
    }
    /// Non-throwing history(). Thread-safe, noexcept.
    Result<History> try_history(std::int64_t memory_id, Json json = Json::Skip) const noexcept {
        return detail::try_run<History>(
            [&](History& out, detail::Failure& f) { return history_into(memory_id, json, out, f); });
    }

    /// A read-only Db of this database as it was at `time` (rm_open_as_of; RFC
    /// 3339, e.g. "2026-11-20T14:03:00Z", not in the future): recall() and
    /// get_memory() on it answer as of then (content, context and state of then);
    /// writes throw Error(ReadOnly). Built when called, in a file of its own under
    /// $TMPDIR (removed when the view closes): keep it for several reads. It does
    /// not depend on this Db staying open.
    /// Throws Error: InvalidArgument (not an RFC 3339 time, a future time, NUL
    /// byte, this Db is itself a view), Closed, Io. Thread-safe.
    Db as_of(std::string_view time) const {
        return detail::run<Db>([&](Db& out, detail::Failure& f) { return as_of_into(time, out, f); });
    }
    /// Non-throwing as_of(). Thread-safe, noexcept.
    Result<Db> try_as_of(std::string_view time) const noexcept {
        return detail::try_run<Db>([&](Db& out, detail::Failure& f) { return as_of_into(time, out, f); });
    }

private:
    // Each *_into function fills `out` and returns true, or records the failure
    // in `f` and returns false. They throw std::bad_alloc only.

    static const char* not_open_message() noexcept {
        return "robotmem::Db is not open (default-constructed, closed, moved-from or released)";
    }

    rm_db* live(detail::Failure& f) const {
        rm_db* h = handle();
        if (!h) f.set(Status::Closed, not_open_message());
        return h;
    }

    static bool open_into(const OpenOptions& o, Db& out, detail::Failure& f);
    bool learn_into(std::string_view insight, const LearnOptions& o, Json json, LearnResult& out,
                    detail::Failure& f) const;
    bool recall_into(std::string_view query, const RecallOptions& o, Json json, RecallResult& out,
                     detail::Failure& f) const;
    bool perception_into(std::string_view description, const PerceptionOptions& o, Json json,
                         PerceptionResult& out, detail::Failure& f) const;
    bool get_into(std::int64_t memory_id, Json json, MemoryResult& out, detail::Failure& f) const;
    bool rekey_into(const std::array<std::uint8_t, 32>& key, bool& out, detail::Failure& f) const;
    bool set_expiry_into(std::int64_t memory_id, double ttl_seconds, std::string_view expires_at, bool& out,
                         detail::Failure& f) const;
    bool forget_into(std::int64_t memory_id, std::string_view reason, Json json, ForgetResult& out,
                     detail::Failure& f) const;
    bool update_into(std::int64_t memory_id, std::string_view new_content, std::optional<std::string_view> context,
                     Json json, UpdateResult& out, detail::Failure& f) const;
    bool start_into(std::string_view collection, std::string_view context, Json json, Session& out,
                    detail::Failure& f) const;
    bool end_into(std::string_view session_id, std::optional<double> score, Json json, SessionSummary& out,
                  detail::Failure& f) const;
    bool status_into(Json json, EmbeddingStatus& out, detail::Failure& f) const;
    bool purge_into(double older_than_seconds, PurgeResult& out, detail::Failure& f) const;
    bool reembed_into(std::size_t limit, ReembedResult& out, detail::Failure& f) const;
    /// rm_learn_options for `o` (strings point into `o`, tags into `tags`).
    /// Fails on a NUL byte, naming the field.
    static bool learn_options_into(const LearnOptions& o, detail::TagArray& tags, rm_learn_options& c,
                                   detail::Failure& f);
    bool batch_into(const std::vector<LearnItem>& items, std::vector<LearnResult>& out, detail::Failure& f) const;
    bool history_into(std::int64_t memory_id, Json json, History& out, detail::Failure& f) const;
    bool as_of_into(std::string_view time, Db& out, detail::Failure& f) const;

    std::atomic<rm_db*> db_{nullptr};
};

}  // namespace robotmem

#include "db_impl.hpp"

#endif  // ROBOTMEM_HPP
