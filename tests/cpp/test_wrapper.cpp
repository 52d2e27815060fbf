// Every operation of the C++ wrapper on a temporary database file: typed results,
// error mapping, the try_* variants, filter / spatial builders (escaping), binary
// perception data, sessions, JSON renderings, the move semantics of Db, and the
// embedding side (status, batch learn, reembed) without a model; with the model
// (ROBOTMEM_TEST_MODEL_DIR / ROBOTMEM_TEST_ORT_LIBRARY in the environment, set by
// CMake) also a hybrid recall. Without the model that part is skipped loudly,
// unless ROBOTMEM_REQUIRE_MODEL=1 (then the test fails); ROBOTMEM_TEST_NO_MODEL=<why>
// skips it on purpose (the valgrind run).
#include "check.hpp"

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using robotmem::Db;
using robotmem::EmbedState;
using robotmem::Error;
using robotmem::Json;
using robotmem::Op;
using robotmem::RecallOptions;
using robotmem::Status;

namespace {

// --- compile-time properties ------------------------------------------------

static_assert(!std::is_copy_constructible<Db>::value && !std::is_copy_assignable<Db>::value, "Db is move-only");
static_assert(std::is_nothrow_move_constructible<Db>::value && std::is_nothrow_move_assignable<Db>::value, "");
static_assert(std::is_nothrow_destructible<Db>::value, "");
static_assert(std::is_nothrow_copy_constructible<Error>::value, "copying an exception must not throw");
static_assert(std::is_base_of<std::runtime_error, Error>::value, "");
static_assert(std::is_nothrow_move_constructible<robotmem::RecallResult>::value, "");
static_assert(std::is_nothrow_move_constructible<robotmem::SessionSummary>::value, "");
static_assert(std::is_nothrow_move_constructible<robotmem::Result<Db>>::value, "");
static_assert(noexcept(std::declval<const Db&>().try_recall("q")), "try_* are noexcept");
static_assert(noexcept(std::declval<const Db&>().try_learn("q")), "");
static_assert(noexcept(Db::try_open()), "");
static_assert(static_cast<int>(Status::Panic) == RM_PANIC && static_cast<int>(Status::Closed) == RM_CLOSED, "");
static_assert(static_cast<int>(robotmem::PerceptionType::Procedural) == RM_PERCEPTION_PROCEDURAL, "");
static_assert(static_cast<int>(robotmem::SearchMode::Scan) == RM_MODE_SCAN, "");
static_assert(static_cast<int>(EmbedState::ModelMismatch) == RM_EMBED_MODEL_MISMATCH, "");
static_assert(noexcept(std::declval<const Db&>().try_embedding_status()), "");
static_assert(noexcept(std::declval<const Db&>().try_reembed()), "");
static_assert(noexcept(std::declval<const Db&>().try_learn_batch({})), "");
static_assert(std::is_nothrow_move_constructible<robotmem::EmbeddingStatus>::value, "");
static_assert(std::is_nothrow_move_constructible<robotmem::Result<std::vector<robotmem::LearnResult>>>::value, "");

const char* const CTX_A =
    R"({"params": {"grip_force": {"value": 12.5, "unit": "N"}},)"
    R"( "spatial": {"object_position": [0.1, 0.2, 0.3]},)"
    R"( "robot": {"id": "ur5e-01"}, "task": {"name": "pick_cup", "success": true}})";

std::int64_t learn_new(const Db& db, std::string_view text, std::string context = {}, std::string collection = {}) {
    robotmem::LearnOptions o;
    o.context = std::move(context);
    o.collection = std::move(collection);
    auto r = db.learn(text, o);
    CHECK(!r.duplicate && r.memory_id > 0);
    return r.memory_id;
}

bool has_id(const robotmem::RecallResult& r, std::int64_t id) {
    for (const auto& h : r.hits)
        if (h.memory.id == id) return true;
    return false;
}

bool has(const std::vector<std::string>& v, std::string_view s) {
    for (const auto& x : v)
        if (x == s) return true;
    return false;
}

RecallOptions in(std::string collection, int n = 100) {
    RecallOptions o;
    o.collection = std::move(collection);
    o.n = n;
    return o;
}

void test_library_functions() {
    CHECK(std::string(robotmem::version()) == RM_VERSION_STRING);
    const char* const names[] = {"RM_OK", "RM_INVALID_ARGUMENT", "RM_NOT_FOUND", "RM_DUPLICATE", "RM_BUSY",
                                 "RM_IO", "RM_CORRUPT", "RM_EMBEDDING_UNAVAILABLE", "RM_FULL",
                                 "RM_INVALID_STATE", "RM_SCHEMA_TOO_NEW", "RM_CLOSED", "RM_READ_ONLY",
                                 "RM_INTERNAL", "RM_PANIC", "RM_OVER_BUDGET", "RM_KEY"};
    for (int i = 0; i <= RM_KEY; ++i) CHECK(std::string(robotmem::status_name(static_cast<Status>(i))) == names[i]);
    CHECK(std::string(robotmem::status_name(static_cast<Status>(99))) == "RM_UNKNOWN");

    const Error e(Status::NotFound, "memory 7 not found");
    CHECK(e.code() == Status::NotFound && std::string(e.message()) == "memory 7 not found");
    CHECK(std::string(e.what()) == "RM_NOT_FOUND: memory 7 not found");
    const Error copy = e;
    CHECK(copy.code() == Status::NotFound && std::string(copy.message()) == e.message());

    CHECK(std::string(robotmem::to_string(robotmem::PerceptionType::Tactile)) == "tactile");
    CHECK(std::string(robotmem::to_string(robotmem::SearchMode::Bm25Only)) == "bm25_only");
    CHECK(std::string(robotmem::to_string(robotmem::DupMethod::Jaccard)) == "jaccard");
    CHECK(std::string(robotmem::to_string(EmbedState::ModelMismatch)) == "model_mismatch");
    CHECK(std::string(robotmem::to_string(static_cast<EmbedState>(42))) == "unknown");
    CHECK(std::string(robotmem::to_string(Op::Lte)) == "$lte");
}

void test_result_type() {
    robotmem::Result<int> ok(42);
    CHECK(ok.ok() && static_cast<bool>(ok) && ok.status() == Status::Ok && ok.message().empty());
    CHECK(ok.value() == 42 && *ok == 42);
    robotmem::Result<int> bad(Status::Busy, "locked");
    CHECK(!bad && bad.status() == Status::Busy && bad.message() == "locked");
    CHECK_THROWS(bad.value(), Status::Busy, "locked");
    CHECK(bad.error().code() == Status::Busy);
    robotmem::Result<int> not_ok(Status::Ok, "misuse");  // a failure can never claim Ok
    CHECK(!not_ok.ok() && not_ok.status() == Status::Internal);
    robotmem::Result<void> v;
    CHECK(v.ok());
    v.value();
    CHECK_THROWS(robotmem::Result<void>(Status::Full, "disk").value(), Status::Full, "disk");
    std::string moved = robotmem::Result<std::string>(std::string("abc")).value();
    CHECK(moved == "abc");
}

void test_open(const check::TempDir& dir) {
    // Bad paths: a directory that cannot be created, a file that is not a database.
    CHECK_THROWS(Db::open(robotmem::OpenOptions::file("/proc/robotmem-no/such/dir/x.db")), Status::Io, "");
    const std::string junk = dir.file("junk.db");
    {
        std::ofstream f(junk);
        f << "this is not an SQLite database, just text that is long enough to look like one maybe\n";
    }
    // A library with encryption cannot tell noise from an encrypted file: Status::Key.
    const Status not_db = robotmem::encryption_available() ? Status::Key : Status::Corrupt;
    CHECK_THROWS(Db::open(check::test_options(junk)), not_db, "");
    auto r = Db::try_open(check::test_options(junk));
    CHECK(!r && r.status() == not_db && !r.message().empty());
    CHECK_THROWS(Db::open(robotmem::OpenOptions::file(std::string("a\0b.db", 6))), Status::InvalidArgument,
                 "opts.path contains a NUL byte at offset 1");
    robotmem::OpenOptions bad = robotmem::OpenOptions::in_memory();
    bad.default_collection = std::string("x\0y", 3);
    CHECK_RESULT(Db::try_open(bad), Status::InvalidArgument, "opts.default_collection");
    bad = robotmem::OpenOptions::in_memory();
    bad.decay_rate = 2.0;
    CHECK_RESULT(Db::try_open(bad), Status::InvalidArgument, "decay");

    // Every option is passed through: a default collection, preload.
    auto o = robotmem::OpenOptions::in_memory();
    o.default_collection = "kitchen";
    o.preload = true;
    o.busy_timeout_ms = 100;
    o.rrf_k = 30;
    o.decay_rate = 0.02;
    auto opened = Db::try_open(o);
    CHECK(opened.ok() && opened->is_open());
    Db db = std::move(opened).value();
    CHECK(db.learn("store the mugs on the second shelf").memory_id > 0);
    CHECK(db.recall("mugs shelf").hits.at(0).memory.collection == "kitchen");
}

// learn: created, exact and near duplicates, typed fields of recall and get_memory.
std::int64_t test_learn_recall(const Db& db) {
    robotmem::LearnOptions lo;
    lo.context = CTX_A;
    lo.tags = {"Robot Arm", "kitchen"};
    const auto a = db.learn("grip_force=12.5N works best because the sensor was calibrated", lo);
    CHECK(a.memory_id > 0 && !a.duplicate && a.dup_method == robotmem::DupMethod::None && a.similarity == 0.0);
    CHECK(!a.category.empty() && a.confidence >= 0.80 && a.confidence <= 0.95);
    CHECK(has(a.tags, "robot_arm") && has(a.tags, "kitchen"));
    CHECK(!a.json);  // Json::Skip by default

    const auto dup = db.learn("grip_force=12.5N works best because the sensor was calibrated", lo);
    CHECK(dup.duplicate && dup.dup_method == robotmem::DupMethod::Exact && dup.memory_id == a.memory_id);
    CHECK(dup.similarity == 1.0);
    const auto near = db.learn("The grip_force=12.5N works best because the sensor was calibrated!");
    CHECK(near.duplicate && near.dup_method == robotmem::DupMethod::Jaccard && near.similarity > 0.7);
    const std::int64_t b = learn_new(db, "grip_force=15N works best because the sensor was calibrated");

    const auto m = db.get_memory(a.memory_id);
    CHECK(m.memory.id == a.memory_id && m.tags.size() == a.tags.size());
    for (const auto& t : a.tags) CHECK(has(m.tags, t));

    const auto r = db.recall("grip force calibrated");
    CHECK(r.hits.size() == 2 && r.mode == robotmem::SearchMode::Bm25Only && r.query_ms >= 0.0);
    CHECK(r.hits[0].score == 1.0 && r.hits[1].score > 0.0 && r.hits[1].score <= 1.0);
    CHECK(!r.hits[0].distance && has_id(r, b));
    const robotmem::Memory& hit = r.hits[0].memory.id == a.memory_id ? r.hits[0].memory : r.hits[1].memory;
    CHECK(hit.id == a.memory_id);
    CHECK(hit.content == "grip_force=12.5N works best because the sensor was calibrated");
    CHECK(hit.category == a.category && hit.confidence == a.confidence && hit.collection == "default");
    CHECK(!hit.session_id && hit.type == robotmem::MemoryType::Fact && hit.status == robotmem::MemoryStatus::Active);
    CHECK(hit.superseded_by == 0 && hit.perception_type == robotmem::PerceptionType::None);
    CHECK(hit.perception_data.empty() && !hit.perception_metadata && !hit.human_summary.empty());
    CHECK(hit.created_at.size() >= 20 && hit.created_at[10] == 'T' && hit.created_at.back() == 'Z');
    CHECK(!hit.updated_at.empty());
    CHECK(hit.context_json.front() == '{' && check::contains(hit.context_json, "pick_cup"));
    CHECK(hit.params_json && check::contains(*hit.params_json, "12.5"));
    CHECK(hit.spatial_json && check::contains(*hit.spatial_json, "object_position"));
    CHECK(hit.robot_json && check::contains(*hit.robot_json, "ur5e-01"));
    CHECK(hit.task_json && check::contains(*hit.task_json, "pick_cup"));

    const auto only_b = db.recall("15N");
    CHECK(only_b.hits.size() == 1 && only_b.hits[0].memory.id == b);
    CHECK(!only_b.hits[0].memory.params_json && !only_b.hits[0].memory.task_json);

    // Chinese text is segmented; a query with no searchable word scans.
    const std::int64_t zh = learn_new(db, "推动任务最终距离0.032米，抓取杯子成功", R"({"task": {"success": true}})");
    const auto rz = db.recall("抓取杯子");
    CHECK(!rz.hits.empty() && rz.hits[0].memory.id == zh);
    CHECK(db.recall("*").mode == robotmem::SearchMode::Scan);
    // n and min_confidence are passed through.
    RecallOptions one;
    one.n = 1;
    CHECK(db.recall("grip force calibrated", one).hits.size() == 1);
    one.min_confidence = 0.99;
    CHECK(db.recall("grip force calibrated", one).hits.empty());
    // group_similar: the 12.5N and 15N texts say the same thing; one hit lists the other.
    CHECK(r.hits[0].similar.empty() && r.hits[1].similar.empty());
    RecallOptions grouped;
    grouped.group_similar = true;
    const auto g = db.recall("grip force calibrated", grouped);
    CHECK(g.hits.size() == 1 && g.hits[0].similar.size() == 1);
    CHECK(g.hits[0].similar[0] == (g.hits[0].memory.id == a.memory_id ? b : a.memory_id));
    return a.memory_id;
}

// The statuses of the C ABI arrive as Error / Result with the library's message.
void test_error_mapping(const Db& db) {
    CHECK_THROWS(db.learn(""), Status::InvalidArgument, "insight");
    CHECK_THROWS(db.learn("   \t "), Status::InvalidArgument, "insight");
    CHECK_THROWS(db.learn(std::string(301, 'x')), Status::InvalidArgument, "insight");
    CHECK_THROWS(db.get_memory(987654321), Status::NotFound, "");
    CHECK_THROWS(db.get_memory(0), Status::InvalidArgument, "memory_id");
    CHECK_THROWS(db.forget(987654321, "gone"), Status::NotFound, "");
    CHECK_THROWS(db.update(987654321, "no such memory"), Status::NotFound, "");
    CHECK_THROWS(db.recall(""), Status::InvalidArgument, "query");
    RecallOptions bad_conf;
    bad_conf.min_confidence = 1.5;
    CHECK_THROWS(db.recall("grasp", bad_conf), Status::InvalidArgument, "min_confidence");
    CHECK_THROWS(db.recall("grasp", RecallOptions().context_filter_json(R"({"x": {"$regex": "a"}})")),
                 Status::InvalidArgument, "$regex");
    CHECK_THROWS(db.recall("grasp", RecallOptions().context_filter_json("{not json")), Status::InvalidArgument,
                 "context_filter");
    CHECK_THROWS(db.recall("grasp", RecallOptions().spatial_sort_json(R"({"field": "p"})")),
                 Status::InvalidArgument, "spatial_sort");
    robotmem::LearnOptions bad_ctx;
    bad_ctx.context = "{\"unterminated\": ";
    CHECK_THROWS(db.learn("context that is not JSON", bad_ctx), Status::InvalidArgument, "context");
    robotmem::LearnOptions bad_tags;
    bad_tags.tags.assign(21, "t");
    CHECK_THROWS(db.learn("too many tags for one memory", bad_tags), Status::InvalidArgument, "tag");
    bad_tags.tags = {""};
    CHECK_THROWS(db.learn("an empty tag for one memory", bad_tags), Status::InvalidArgument, "tag");

    // forget twice, update a forgotten memory, update to another memory's content.
    const std::int64_t id = learn_new(db, "grip force 15N optimal for mugs");
    const std::int64_t left = learn_new(db, "approach mugs from the left side");
    learn_new(db, "approach mugs from the right side");
    const auto f = db.forget(id, "sensor calibration error");
    CHECK(f.memory_id == id && f.content == "grip force 15N optimal for mugs" && f.reason == "sensor calibration error");
    CHECK(db.get_memory(id).memory.status == robotmem::MemoryStatus::Invalidated);
    CHECK(!has_id(db.recall("optimal mugs"), id));
    CHECK_THROWS(db.forget(id, "again"), Status::InvalidState, "");
    CHECK_THROWS(db.update(id, "grip force 16N optimal for mugs"), Status::InvalidState, "");
    CHECK_THROWS(db.forget(left, "  "), Status::InvalidArgument, "reason");
    CHECK_THROWS(db.update(left, "approach mugs from the right side"), Status::Duplicate, "");
    CHECK(db.get_memory(left).memory.content == "approach mugs from the left side");

    // The Error keeps its message whatever runs on the thread afterwards.
    try {
        db.learn("");
        CHECK(false);
    } catch (const Error& e) {
        CHECK(db.recall("approach").hits.size() >= 1);  // a successful call resets rm_last_error()
        CHECK(std::string(rm_last_error()).empty());
        CHECK(check::contains(e.message(), "insight") && check::contains(e.what(), "RM_INVALID_ARGUMENT"));
    }
}

// An embedded NUL is an InvalidArgument naming the field, in every string input.
void test_embedded_nul(const Db& db, std::int64_t id) {
    const std::string_view nul("grasp\0mug", 9);
    const std::string nuls(nul);
    CHECK_THROWS(db.learn(nul), Status::InvalidArgument, "insight contains a NUL byte at offset 5");
    robotmem::LearnOptions lo;
    lo.context = nuls;
    CHECK_THROWS(db.learn("valid insight text", lo), Status::InvalidArgument, "opts.context");
    lo = {};
    lo.collection = nuls;
    CHECK_THROWS(db.learn("valid insight text", lo), Status::InvalidArgument, "opts.collection");
    lo = {};
    lo.session_id = nuls;
    CHECK_THROWS(db.learn("valid insight text", lo), Status::InvalidArgument, "opts.session_id");
    lo = {};
    lo.tags = {"fine", nuls};
    CHECK_THROWS(db.learn("valid insight text", lo), Status::InvalidArgument, "opts.tags[1]");
    CHECK_THROWS(db.recall(nul), Status::InvalidArgument, "query");
    RecallOptions ro;
    ro.collection = nuls;
    CHECK_THROWS(db.recall("mug", ro), Status::InvalidArgument, "opts.collection");
    CHECK_THROWS(db.recall("mug", RecallOptions().context_filter_json(nuls)), Status::InvalidArgument,
                 "opts.context_filter");
    CHECK_THROWS(db.recall("mug", RecallOptions().spatial_sort_json(nuls)), Status::InvalidArgument,
                 "opts.spatial_sort");
    CHECK_THROWS(db.save_perception(nul), Status::InvalidArgument, "description");
    robotmem::PerceptionOptions po;
    po.metadata = nuls;
    CHECK_THROWS(db.save_perception("valid description", po), Status::InvalidArgument, "opts.metadata");
    CHECK_THROWS(db.forget(id, nul), Status::InvalidArgument, "reason");
    CHECK_THROWS(db.update(id, nul), Status::InvalidArgument, "new_content");
    CHECK_THROWS(db.update(id, "valid new content", nul), Status::InvalidArgument, "context");
    CHECK_THROWS(db.start_session(nul), Status::InvalidArgument, "collection");
    CHECK_THROWS(db.start_session({}, nul), Status::InvalidArgument, "context");
    CHECK_THROWS(db.end_session(nul), Status::InvalidArgument, "session_id");
    CHECK_RESULT(db.try_learn(nul), Status::InvalidArgument, "insight");
    // Nothing was stored or changed by any of them.
    CHECK(db.recall("valid insight text").hits.empty());
    // A view that is not NUL-terminated is copied, not read past its end.
    const char buf[] = "lift the crate slowly with two hands XXXX";
    const auto l = db.learn(std::string_view(buf, sizeof buf - 1 - 5));
    CHECK(db.get_memory(l.memory_id).memory.content == "lift the crate slowly with two hands");
    // A long input (beyond the inline buffer) is fine too.
    const std::string long_text = "long insight " + std::string(280, 'q');
    CHECK(db.get_memory(db.learn(long_text).memory_id).memory.content == long_text);
}

// Every try_* reports the same statuses as its throwing twin, without throwing.
void test_try_variants(const Db& db) {
    auto l = db.try_learn("calibrate the wrist camera before each shift");
    CHECK(l.ok() && l->memory_id > 0 && !l->duplicate && l.message().empty());
    CHECK_RESULT(db.try_learn(""), Status::InvalidArgument, "insight");
    auto r = db.try_recall("wrist camera");
    CHECK(r && !r->hits.empty() && r->hits[0].memory.id == l->memory_id);
    CHECK_RESULT(db.try_recall("wrist", RecallOptions().filter("x", Op::Lt, std::nan(""))),
                 Status::InvalidArgument, "not a finite number");
    CHECK_RESULT(db.try_get_memory(987654321), Status::NotFound, "");
    CHECK(db.try_get_memory(l->memory_id).value().memory.content == "calibrate the wrist camera before each shift");
    CHECK_RESULT(db.try_save_perception("shrt"), Status::InvalidArgument, "description");
    auto p = db.try_save_perception("wrist camera frame while calibrating");
    CHECK(p.ok() && p->perception_type == robotmem::PerceptionType::Visual);
    auto u = db.try_update(l->memory_id, "calibrate the wrist camera before every shift");
    CHECK(u.ok() && u->old_content == "calibrate the wrist camera before each shift");
    CHECK_RESULT(db.try_update(l->memory_id, ""), Status::InvalidArgument, "content");
    auto f = db.try_forget(l->memory_id, "procedure changed");
    CHECK(f.ok() && f->memory_id == l->memory_id);
    CHECK_RESULT(db.try_forget(l->memory_id, "again"), Status::InvalidState, "");
    auto s = db.try_start_session();
    CHECK(s.ok() && s->session_id.size() == 36);
    auto e = db.try_end_session(s->session_id, 0.5);
    CHECK(e.ok() && e->outcome_score && *e->outcome_score == 0.5);
    CHECK_RESULT(db.try_end_session(s->session_id), Status::InvalidState, "");
    CHECK_RESULT(db.try_end_session("00000000-0000-4000-8000-000000000000"), Status::NotFound, "");
    CHECK_RESULT(db.try_end_session(s->session_id, 1.5), Status::InvalidArgument, "");
    CHECK(db.try_flush().ok());
}

void test_builders_render() {
    auto o = RecallOptions()
                 .filter_eq("task.success", true)
                 .filter("params.force.value", Op::Gte, 12)
                 .filter("params.force.value", Op::Lt, 14.5)
                 .filter_eq("robot.id", "ur5e-01")
                 .filter("params.force.value", Op::Gte, 11)  // replaces the first $gte
                 .filter("env.x", Op::Ne, nullptr);
    CHECK(o.render_context_filter() ==
          R"({"task.success": true, "params.force.value": {"$gte": 11, "$lt": 14.5}, "robot.id": "ur5e-01",)"
          R"( "env.x": {"$ne": null}})");
    CHECK(o.has_context_filter() && !o.has_spatial_sort() && o.render_spatial_sort().empty());

    // Escaping: quotes, backslashes, control characters, NUL; UTF-8 unchanged.
    const std::string nasty = std::string("say \"hi\" \\ C:\\tmp\x01\x1f\n\t\b\f\r") + std::string(1, '\0') +
                              "ünï 抓取 😀\x7f";
    CHECK(RecallOptions().filter_eq("a\"b\\c", nasty).render_context_filter() ==
          "{\"a\\\"b\\\\c\": \"say \\\"hi\\\" \\\\ C:\\\\tmp\\u0001\\u001f\\n\\t\\b\\f\\r\\u0000ünï 抓取 😀\x7f\"}");

    // Numbers: integers of every width, unsigned beyond int64, shortest doubles.
    CHECK(RecallOptions()
              .filter("a", Op::Eq, static_cast<std::int8_t>(-8))
              .filter("b", Op::Eq, static_cast<std::uint8_t>(200))
              .filter("c", Op::Eq, std::numeric_limits<std::uint64_t>::max())
              .filter("d", Op::Eq, std::numeric_limits<std::int64_t>::min())
              .filter("e", Op::Eq, 0.1)
              .filter("f", Op::Eq, 1e21)
              .filter("g", Op::Eq, 2.5f)
              .filter("h", Op::Eq, std::string("str"))
              .filter("i", Op::Eq, false)
              .render_context_filter() ==
          R"({"a": -8, "b": 200, "c": 18446744073709551615, "d": -9223372036854775808, "e": 0.1, "f": 1e+21,)"
          R"( "g": 2.5, "h": "str", "i": false})");

    // Spatial; a later spatial() or raw JSON replaces the previous sort.
    auto s = RecallOptions().spatial("spatial.object_position", {0.1, -2, 3e-7}, 0.25);
    CHECK(s.render_spatial_sort() ==
          R"({"field": "spatial.object_position", "target": [0.1, -2, 3e-07], "max_distance": 0.25})");
    s.spatial("spatial.p", {1});
    CHECK(s.render_spatial_sort() == R"({"field": "spatial.p", "target": [1]})");
    s.spatial_sort_json(R"({"field": "q", "target": [0]})");
    CHECK(s.render_spatial_sort() == R"({"field": "q", "target": [0]})");
    s.clear_spatial_sort();
    CHECK(!s.has_spatial_sort());

    // Non-finite numbers and raw JSON mixed with conditions are rejected at render time.
    CHECK_THROWS(RecallOptions().filter("x", Op::Lt, std::numeric_limits<double>::infinity()).render_context_filter(),
                 Status::InvalidArgument, "\"x\" is not a finite number");
    CHECK_THROWS(RecallOptions().spatial("p", {0, std::nan("")}).render_spatial_sort(), Status::InvalidArgument,
                 "target[1]");
    CHECK_THROWS(RecallOptions().spatial("p", {0}, -std::numeric_limits<double>::infinity()).render_spatial_sort(),
                 Status::InvalidArgument, "max_distance");
    CHECK_THROWS(RecallOptions().context_filter_json("{}").filter_eq("x", 1).render_context_filter(),
                 Status::InvalidArgument, "cannot be combined");
    auto raw = RecallOptions().context_filter_json(R"({"k": 1})");
    CHECK(raw.render_context_filter() == R"({"k": 1})");
    raw.clear_context_filter();
    CHECK(!raw.has_context_filter() && raw.render_context_filter().empty());
}

// Filters built by the wrapper are accepted by the library and filter correctly.
void test_builders_filter(const Db& db) {
    const std::string coll = "filters";
    std::int64_t ok_ids[5];
    for (int k = 0; k < 5; ++k)
        ok_ids[k] = learn_new(db, "grasp attempt " + std::to_string(k) + " on mug",
                              R"({"task": {"success": true}, "params": {"force": {"value": )" +
                                  std::to_string(10 + k) + "}}}",
                              coll);
    for (int k = 0; k < 30; ++k)
        learn_new(db, "grasp attempt " + std::to_string(100 + k) + " on mug", R"({"task": {"success": false}})", coll);

    auto r = db.recall("grasp mug", in(coll, 5).filter_eq("task.success", true));
    CHECK(r.hits.size() == 5);
    for (auto id : ok_ids) CHECK(has_id(r, id));
    CHECK(db.recall("grasp mug", in(coll).filter_eq("task.success", false)).hits.size() == 30);
    r = db.recall("grasp mug", in(coll)
                                   .filter_eq("task.success", true)
                                   .filter("params.force.value", Op::Gte, 12)
                                   .filter("params.force.value", Op::Lt, 14.0));
    CHECK(r.hits.size() == 2 && has_id(r, ok_ids[2]) && has_id(r, ok_ids[3]));
    CHECK(db.recall("grasp mug", in(coll).filter("params.force.value", Op::Ne, 10)).hits.size() == 4);
    CHECK(db.recall("grasp mug", in(coll).filter("params.force.value", Op::Lte, 10u)).hits.size() == 1);
    CHECK(db.recall("grasp mug", in(coll).filter("params.force.value", Op::Gt, 13.5f)).hits.size() == 1);
    CHECK(db.recall("grasp mug", in(coll).filter_eq("env.sim_or_real", "real")).hits.empty());

    // Strings with quotes, backslashes, control characters and non-ASCII text,
    // written by hand as JSON in the context, are matched by the escaped builder value.
    const std::string esc = "escapes";
    const std::int64_t nasty = learn_new(db, "note with a tricky label one",
                                         R"({"task": {"note": "say \"hi\" \\ C:\\tmp\\ ünï 抓取 😀\tx\ny\u0001"}})", esc);
    const std::int64_t decoy = learn_new(db, "note with a tricky label two",
                                         R"({"task": {"note": "say \"hi\" / C:/tmp/ ünï 抓取 😀\tx\ny\u0001"}})", esc);
    const std::int64_t with_nul = learn_new(db, "note with a tricky label three", R"({"task": {"note": "a\u0000b"}})", esc);
    const std::int64_t odd_keys = learn_new(db, "note with a tricky label four", R"({"we\"ird": {"k\\ey": 5, "n": null}})", esc);
    const std::string value = "say \"hi\" \\ C:\\tmp\\ ünï 抓取 😀\tx\ny\x01";
    r = db.recall("tricky label", in(esc).filter_eq("task.note", value));
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == nasty);
    r = db.recall("tricky label", in(esc).filter("task.note", Op::Ne, value));
    CHECK(r.hits.size() == 2 && has_id(r, decoy) && has_id(r, with_nul));
    r = db.recall("tricky label", in(esc).filter_eq("task.note", std::string("a\0b", 3)));
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == with_nul);
    CHECK(db.recall("tricky label", in(esc).filter_eq("task.note", "a")).hits.empty());
    r = db.recall("tricky label", in(esc).filter_eq("we\"ird.k\\ey", 5));
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == odd_keys);
    r = db.recall("tricky label", in(esc).filter_eq("we\"ird.n", nullptr));
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == odd_keys);
    // String order comparisons.
    r = db.recall("tricky label", in(esc).filter("task.note", Op::Lt, "b"));
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == with_nul);

    // A raw filter is passed unchanged.
    r = db.recall("grasp mug", in(coll).context_filter_json(R"({"params.force.value": {"$gt": 13}})"));
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == ok_ids[4]);

    // Spatial sort: nearest first, distances, cutoff, memories without coordinates last.
    const std::string sp = "spatial";
    const std::int64_t far = learn_new(db, "pick box at far shelf", R"({"spatial": {"pos": [5.0, 5.0, 0.0]}})", sp);
    const std::int64_t near = learn_new(db, "pick box at near table", R"({"spatial": {"pos": [0.1, 0.0, 0.0]}})", sp);
    const std::int64_t mid = learn_new(db, "pick box at middle cart", R"({"spatial": {"pos": [0.0, 1.0, 0.0]}})", sp);
    const std::int64_t none = learn_new(db, "pick box somewhere unknown", "", sp);
    r = db.recall("pick box", in(sp, 10).spatial("spatial.pos", {0, 0, 0}));
    CHECK(r.hits.size() == 4 && r.hits[0].memory.id == near && r.hits[1].memory.id == mid);
    CHECK(r.hits[2].memory.id == far && r.hits[3].memory.id == none);
    CHECK(r.hits[0].distance && std::fabs(*r.hits[0].distance - 0.1) < 1e-9);
    CHECK(r.hits[1].distance && std::fabs(*r.hits[1].distance - 1.0) < 1e-9);
    CHECK(r.hits[2].distance && std::fabs(*r.hits[2].distance - std::sqrt(50.0)) < 1e-9);
    CHECK(r.hits[3].distance && std::isinf(*r.hits[3].distance));
    r = db.recall("pick box", in(sp, 10).spatial("spatial.pos", {0, 0, 0}, 1.0));
    CHECK(r.hits.size() == 2 && r.hits[0].memory.id == near && r.hits[1].memory.id == mid);
    // Combined with a filter (a memory lacking the path never matches, even $ne).
    r = db.recall("pick box", in(sp, 10).spatial("spatial.pos", {5, 5, 0}).filter("spatial.pos", Op::Ne, nullptr));
    CHECK(r.hits.size() == 3 && r.hits[0].memory.id == far && *r.hits[0].distance == 0.0 && !has_id(r, none));
}

// Binary perception data with NUL bytes comes back byte for byte.
void test_perception(const Db& db) {
    const std::vector<std::uint8_t> data = {0x00, 0x01, 0xff, 0x00, 'N', 0x00, 0x80, 0x7f, 0x00};
    robotmem::PerceptionOptions o;
    o.type = robotmem::PerceptionType::Tactile;
    o.data = data;
    o.metadata = R"({"format": "raw", "rate_hz": 100})";
    o.context = R"({"task": {"name": "cup_grasp"}})";
    o.tags = {"Finger Tip"};
    const auto p = db.save_perception("fingertip pressure burst during cup grasp", o, Json::Render);
    CHECK(p.memory_id > 0 && !p.duplicate && p.perception_type == robotmem::PerceptionType::Tactile);
    CHECK(p.collection == "default" && p.json && check::contains(*p.json, "tactile"));
    const auto dup = db.save_perception("fingertip pressure burst during cup grasp", o);
    CHECK(dup.duplicate && dup.memory_id == p.memory_id);

    const auto m = db.get_memory(p.memory_id, Json::Render);
    CHECK(m.memory.type == robotmem::MemoryType::Perception);
    CHECK(m.memory.perception_type == robotmem::PerceptionType::Tactile);
    CHECK(m.memory.perception_data == data);
    CHECK(m.memory.perception_metadata && check::contains(*m.memory.perception_metadata, "rate_hz"));
    CHECK(m.memory.task_json && check::contains(*m.memory.task_json, "cup_grasp"));
    CHECK(has(m.tags, "finger_tip"));
    CHECK(check::contains(m.to_json(), "base64"));
    const auto r = db.recall("fingertip pressure");
    CHECK(r.hits.size() == 1 && r.hits[0].memory.perception_data == data);

    // A view of caller memory (no copy), 64 KiB of every byte value.
    std::vector<std::uint8_t> big(64 * 1024);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 7);
    robotmem::PerceptionOptions v;
    v.type = robotmem::PerceptionType::Proprioceptive;
    v.data_view(big.data(), big.size());
    const auto pv = db.save_perception("joint torques of the whole pick trajectory", v);
    CHECK(db.get_memory(pv.memory_id).memory.perception_data == big);
    // Text data; data and data_view together are refused; type None is refused.
    const auto pt = db.save_perception("planned path as JSON waypoints",
                                       robotmem::PerceptionOptions().data_text(R"([[0,0],[1,2]])"));
    CHECK(db.get_memory(pt.memory_id).memory.perception_data.size() == 13);
    v.data = {1, 2, 3};
    CHECK_THROWS(db.save_perception("both kinds of data at once", v), Status::InvalidArgument, "data_view");
    robotmem::PerceptionOptions none;
    none.type = robotmem::PerceptionType::None;
    CHECK_THROWS(db.save_perception("perception without a type", none), Status::InvalidArgument, "perception_type");
    robotmem::PerceptionOptions null_view;
    null_view.data_view(nullptr, 4);
    CHECK_THROWS(db.save_perception("null data with a length", null_view), Status::InvalidArgument, "data");
    robotmem::PerceptionOptions bad_meta;
    bad_meta.metadata = "{broken";
    CHECK_THROWS(db.save_perception("metadata that is not JSON", bad_meta), Status::InvalidArgument, "metadata");
}

void test_update_and_sessions(const Db& db) {
    const std::int64_t id = learn_new(db, "approach bottles from the left side");
    const auto u = db.update(id, "approach bottles from above with an open gripper",
                             R"({"task": {"name": "bottle_approach"}})", Json::Render);
    CHECK(u.memory_id == id && u.old_content == "approach bottles from the left side");
    CHECK(u.new_content == "approach bottles from above with an open gripper");
    CHECK(!u.category.empty() && u.confidence > 0.0 && u.json && check::contains(*u.json, "open gripper"));
    auto r = db.recall("bottles above gripper");
    CHECK(!r.hits.empty() && r.hits[0].memory.id == id && r.hits[0].memory.task_json);
    // nullopt keeps the context, "" clears it.
    db.update(id, "approach bottles from above with a wide open gripper");
    CHECK(db.get_memory(id).memory.task_json);
    db.update(id, "approach bottles from above, gripper wide open", "");
    CHECK(!db.get_memory(id).memory.task_json);

    const auto s = db.start_session({}, R"({"robot": {"id": "ur5e-01"}})", Json::Render);
    CHECK(s.session_id.size() == 36 && s.session_id[8] == '-' && s.collection == "default");
    CHECK(s.active_memories_count > 0 && check::contains(s.to_json(), s.session_id));
    robotmem::LearnOptions lo;
    lo.session_id = s.session_id;
    db.learn("sponge wiping leaves streaks at 5N", lo);
    db.learn("wiping in circles at 8N removes the streaks", lo);
    RecallOptions ro;
    ro.session_id = s.session_id;
    r = db.recall("*", ro);
    CHECK(r.hits.size() == 2 && r.hits[0].memory.session_id && *r.hits[0].memory.session_id == s.session_id);
    const auto sum = db.end_session(s.session_id, 0.8, Json::Render);
    CHECK(sum.session_id == s.session_id && sum.collection == "default");
    CHECK(sum.outcome_score && *sum.outcome_score == 0.8 && sum.memory_count == 2);
    std::int64_t by_type = 0, by_cat = 0;
    for (const auto& [name, count] : sum.by_type) by_type += name.empty() ? 0 : count;
    for (const auto& [name, count] : sum.by_category) by_cat += name.empty() ? 0 : count;
    CHECK(by_type == 2 && by_cat == 2);
    CHECK(sum.merged_groups >= 0 && sum.superseded_count >= 0 && sum.decayed_count >= 0);
    CHECK(sum.compression_ratio >= 0.0 && sum.avg_similarity >= 0.0);
    for (const auto& h : sum.related) CHECK(h.memory.id > 0 && h.score > 0.0);
    CHECK(sum.json && check::contains(*sum.json, s.session_id));
    CHECK_THROWS(db.end_session(s.session_id), Status::InvalidState, "");
    CHECK_THROWS(db.learn("a note for an ended session", lo), Status::InvalidState, "");

    const auto e = db.start_session("episodes");
    CHECK(e.collection == "episodes");
    const auto es = db.end_session(e.session_id);
    CHECK(!es.outcome_score && es.memory_count == 0 && !es.json);
    lo.session_id = "00000000-0000-4000-8000-000000000000";
    CHECK_THROWS(db.learn("unknown session memory", lo), Status::NotFound, "");
    CHECK_THROWS(db.end_session(lo.session_id, 0.5), Status::NotFound, "");
    CHECK_THROWS(db.end_session(""), Status::InvalidArgument, "session_id");
}

// Every result renders its JSON with Json::Render, and only then.
void test_json(const Db& db) {
    const auto l = db.learn("torque limit 40Nm protects the elbow joint", {}, Json::Render);
    CHECK(l.json && l.json->front() == '{' && l.json->back() == '}' && check::contains(*l.json, "created"));
    const auto d = db.learn("torque limit 40Nm protects the elbow joint", {}, Json::Render);
    CHECK(check::contains(d.to_json(), "duplicate"));
    const auto r = db.recall("torque elbow", {}, Json::Render);
    CHECK(check::contains(r.to_json(), "\"memories\"") && check::contains(r.to_json(), "40Nm"));
    const auto rs = db.recall("torque elbow", RecallOptions().spatial("spatial.p", {0}), Json::Render);
    CHECK(check::contains(rs.to_json(), "\"memories\""));
    CHECK(check::contains(db.get_memory(l.memory_id, Json::Render).to_json(), "elbow"));
    CHECK(check::contains(db.update(l.memory_id, "torque limit 45Nm protects the elbow joint", std::nullopt,
                                    Json::Render).to_json(), "45Nm"));
    CHECK(check::contains(db.forget(l.memory_id, "replaced by spec v2", Json::Render).to_json(), "spec v2"));
    const auto p = db.save_perception("elbow torque trace at 1 kHz", {}, Json::Render);
    CHECK(check::contains(p.to_json(), "visual"));
    const auto s = db.try_start_session("json", {}, Json::Render);
    CHECK(s.ok() && check::contains(s->to_json(), s->session_id));
    CHECK(check::contains(db.end_session(s->session_id, 1.0, Json::Render).to_json(), s->session_id));
    // Without Json::Render there is no JSON, and to_json() says so.
    const auto plain = db.recall("torque");
    CHECK(!plain.json);
    CHECK_THROWS(plain.to_json(), Status::InvalidState, "Json::Render");
}

void test_move_semantics(const std::string& path) {
    Db a = Db::open(check::test_options(path));
    const std::int64_t id = a.learn("moving handles keep the database open").memory_id;
    rm_db* const ha = a.handle();
    CHECK(ha != nullptr && a.is_open() && static_cast<bool>(a));

    Db b(std::move(a));  // move construction: a is empty, b owns the handle
    CHECK(!a.is_open() && a.handle() == nullptr && b.handle() == ha);  // NOLINT(bugprone-use-after-move)
    CHECK_THROWS(a.learn("moved-from handles refuse work"), Status::Closed, "not open");
    CHECK_RESULT(a.try_recall("anything"), Status::Closed, "not open");
    CHECK_RESULT(a.try_flush(), Status::Closed, "");
    CHECK(b.get_memory(id).memory.id == id);

    Db c = Db::open(check::test_options(path));
    rm_db* const hc = c.handle();
    c = std::move(b);  // move assignment closes c's previous handle
    CHECK(c.handle() == ha && !b.is_open());  // NOLINT(bugprone-use-after-move)
    CHECK(rm_flush(hc) == RM_CLOSED);
    CHECK(rm_flush(ha) == RM_OK);
    Db& self = c;
    c = std::move(self);  // self-move-assignment keeps the handle
    CHECK(c.handle() == ha && rm_flush(ha) == RM_OK);
    b = Db();  // assigning to a moved-from Db is fine
    a = std::move(b);

    // A result outlives the Db it came from.
    auto r = c.recall("moving handles");
    c.close();
    CHECK(!c.is_open() && rm_flush(ha) == RM_CLOSED);
    c.close();  // closing again does nothing
    CHECK(c.try_close().ok());
    CHECK(r.hits.size() == 1 && r.hits[0].memory.content == "moving handles keep the database open");
    CHECK_THROWS(c.recall("moving"), Status::Closed, "");

    // release() hands the handle to C code; Db(rm_db*) adopts one.
    Db d = Db::open(check::test_options(path));
    rm_db* raw = d.release();
    CHECK(!d.is_open() && raw != nullptr);
    Db adopted(raw);
    CHECK(adopted.get_memory(id).memory.id == id);
    // A handle closed behind the Db's back: operations report Closed, close() too.
    CHECK(rm_close(adopted.handle()) == RM_OK);
    CHECK_THROWS(adopted.get_memory(id), Status::Closed, "");
    CHECK_THROWS(adopted.close(), Status::Closed, "");
    CHECK(!adopted.is_open());

    // Destroying a moved-from Db (here: at the end of scope a, b, d) is safe.
    Db e = Db::open(check::test_options(path));
    { Db sink = std::move(e); }
    CHECK(!e.is_open());  // NOLINT(bugprone-use-after-move)
    std::vector<Db> many;
    for (int i = 0; i < 4; ++i) many.push_back(Db::open(check::test_options(path)));  // reallocation moves
    for (const auto& m : many) CHECK(m.get_memory(id).memory.id == id);
}

// --- embeddings ----------------------------------------------------------------

// Embedding options are range-checked and reach the library. Runs before any
// handle loads ONNX Runtime in this process (one runtime per process: once one is
// loaded, a missing ort_library is no longer looked at).
void test_embedding_options(const check::TempDir& dir, const std::optional<check::ModelPaths>& model) {
    auto o = check::test_options(dir.file("options.db"));
    o.embed_threads = 0;
    CHECK_THROWS(Db::open(o), Status::InvalidArgument, "embed_threads");
    o.embed_threads = 65;
    CHECK_RESULT(Db::try_open(o), Status::InvalidArgument, "embed_threads");
    o.embed_threads = 64;
    o.embed_batch = 0;
    CHECK_RESULT(Db::try_open(o), Status::InvalidArgument, "embed_batch");
    o.embed_batch = 1024;
    o.cosine_dedup = std::nan("");
    CHECK_RESULT(Db::try_open(o), Status::InvalidArgument, "cosine_dedup");
    o.cosine_dedup = 2.0;  // above 1: cosine layer off (valid)
    o.model_dir = std::string("mo\0del", 6);
    CHECK_THROWS(Db::open(o), Status::InvalidArgument, "opts.model_dir contains a NUL byte at offset 2");
    o.model_dir.reset();
    o.ort_library = std::string("ort\0", 4);
    CHECK_RESULT(Db::try_open(o), Status::InvalidArgument, "opts.ort_library contains a NUL byte at offset 3");

    // A runtime that does not exist: open succeeds, BM25 only, and the reason names
    // the path (with the real model directory; without one, the runtime is looked
    // for first today, but either missing path is a fine explanation).
    const std::string missing_ort = dir.file("no-runtime/libonnxruntime.so.1");
    o.model_dir = model ? model->dir : dir.file("no-model");
    o.ort_library = missing_ort;
    const Db db = Db::open(o);
    const auto s = db.embedding_status();
    CHECK(s.state == EmbedState::Unavailable && !s.model && s.dim == 0);
    if (model)
        CHECK(check::contains(s.reason, missing_ort));
    else
        CHECK(check::contains(s.reason, missing_ort) || check::contains(s.reason, *o.model_dir));
    CHECK(!db.learn("options check: the gripper needs 12 N").has_embedding);
    CHECK(db.recall("gripper").mode == robotmem::SearchMode::Bm25Only);
}

// embeddings = false: BM25 only with a reason; learn_batch works; reembed reports
// EmbeddingUnavailable.
void test_embeddings_off(const check::TempDir& dir) {
    auto o = check::test_options(dir.file("plain.db"));
    o.embeddings = false;
    o.model_dir = dir.file("no-such-model");  // not even looked at
    const Db db = Db::open(o);
    const auto s = db.embedding_status(Json::Render);
    CHECK(s.state == EmbedState::Unavailable && !s.reason.empty());
    CHECK(!s.model && s.dim == 0 && !s.stored_model && s.pending == 0);
    CHECK(s.kernel == "avx" || s.kernel == "neon" || s.kernel == "portable");
    CHECK(s.index_kernel == "avx512-vnni" || s.index_kernel == "avx2" || s.index_kernel == "neon-dotprod" ||
          s.index_kernel == "neon" || s.index_kernel == "portable");
    CHECK(check::contains(s.to_json(), "\"unavailable\"") && check::contains(s.to_json(), s.kernel));
    const auto ts = db.try_embedding_status();
    CHECK(ts.ok() && ts->state == EmbedState::Unavailable && ts->reason == s.reason && !ts->json);

    CHECK(!db.learn("the charging dock is behind the kitchen door").has_embedding);

    // One result per item, in item order; per-item options; an in-batch repeat.
    robotmem::LearnOptions lo;
    lo.collection = "batch";
    lo.tags = {"Night Shift"};
    lo.context = R"({"task": {"name": "inspect", "success": true}})";
    const std::vector<robotmem::LearnItem> items = {
        {"conveyor belt tension measured 12.5 N in round 1"},
        {"pallet 4 was stacked 3 cm too far left", lo},
        {"charging cycle 7 took 41 minutes"},
        {"conveyor belt tension measured 12.5 N in round 1"},
    };
    const auto out = db.learn_batch(items);
    CHECK(out.size() == 4);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(!out[i].duplicate && out[i].memory_id > 0 && !out[i].has_embedding && !out[i].json);
        CHECK(!out[i].category.empty());
        CHECK(db.get_memory(out[i].memory_id).memory.content == items[i].insight);
    }
    CHECK(out[0].memory_id != out[1].memory_id && out[1].memory_id != out[2].memory_id);
    CHECK(out[3].duplicate && out[3].dup_method == robotmem::DupMethod::Exact);
    CHECK(out[3].memory_id == out[0].memory_id && !out[3].has_embedding);
    const auto m = db.get_memory(out[1].memory_id);
    CHECK(m.memory.collection == "batch" && has(m.tags, "night_shift"));
    CHECK(m.memory.task_json && check::contains(*m.memory.task_json, "inspect"));
    CHECK(db.learn_batch({}).empty());
    const auto tb = db.try_learn_batch({{"wheel odometry drifted 4 mm after lap 9"}});
    CHECK(tb.ok() && tb->size() == 1 && !(*tb)[0].duplicate);

    // A bad item fails the whole batch and stores nothing.
    const std::size_t before = db.recall("*", in("default")).hits.size();
    CHECK_THROWS(db.learn_batch({{"first valid item about the freight elevator"}, {"   "}}), Status::InvalidArgument,
                 "insight");
    CHECK_THROWS(db.learn_batch({{"first valid item about the freight elevator"}, {std::string("nul\0byte", 8)}}),
                 Status::InvalidArgument, "items[1]: insight contains a NUL byte at offset 3");
    robotmem::LearnOptions nul_tag;
    nul_tag.tags = {"fine", std::string("t\0g", 3)};
    CHECK_RESULT(db.try_learn_batch({{"freight elevator a"}, {"freight elevator b"}, {"freight elevator c", nul_tag}}),
                 Status::InvalidArgument, "items[2]: opts.tags[1] contains a NUL byte at offset 1");
    robotmem::LearnOptions nul_ctx;
    nul_ctx.context = std::string("{\0}", 3);
    CHECK_RESULT(db.try_learn_batch({{"freight elevator d", nul_ctx}}), Status::InvalidArgument,
                 "items[0]: opts.context contains a NUL byte");
    robotmem::LearnOptions bad_ctx;
    bad_ctx.context = "{\"unterminated\": ";
    CHECK_RESULT(db.try_learn_batch({{"freight elevator e"}, {"freight elevator with a broken context", bad_ctx}}),
                 Status::InvalidArgument, "context");
    const std::vector<robotmem::LearnItem> too_many(RM_MAX_BATCH + 1, robotmem::LearnItem("freight elevator f"));
    CHECK_RESULT(db.try_learn_batch(too_many), Status::InvalidArgument, "RM_MAX_BATCH");
    CHECK(db.recall("*", in("default")).hits.size() == before);
    CHECK(db.recall("freight elevator").hits.empty());

    // No model on this Db: reembed says so, from both variants; recall is BM25 only.
    CHECK_THROWS(db.reembed(), Status::EmbeddingUnavailable, "");
    CHECK_RESULT(db.try_reembed(5), Status::EmbeddingUnavailable, "");
    CHECK(db.embedding_status().pending == 5);  // every memory above waits for a vector
    CHECK(db.recall("conveyor belt tension").mode == robotmem::SearchMode::Bm25Only);

    CHECK_RESULT(Db().try_embedding_status(), Status::Closed, "not open");
    CHECK_RESULT(Db().try_reembed(), Status::Closed, "not open");
    CHECK_THROWS(Db().learn_batch({{"closed"}}), Status::Closed, "not open");
}

// With the model: hybrid recall of a paraphrase, batch vectors, reembed.
void test_hybrid(const check::TempDir& dir, const check::ModelPaths& model) {
    auto o = check::test_options(dir.file("hybrid.db"));
    o.model_dir = model.dir;
    o.ort_library = model.runtime;
    o.embed_threads = 1;
    o.embed_batch = 2;  // the batch below spans several model runs
    const Db db = Db::open(o);
    const auto s = db.embedding_status();
    if (s.state != EmbedState::Ready) check::fail(__FILE__, __LINE__, "not ready: " + s.reason);
    CHECK(s.dim == 384 && s.reason.empty() && s.model && !s.kernel.empty());

    const auto lidar = db.learn("Lidar gets confused by glass walls in the lobby");
    CHECK(lidar.has_embedding && !lidar.duplicate);
    CHECK(db.learn("The battery must be charged when it falls below 20%").has_embedding);
    const auto batch = db.learn_batch({{"The charging dock is behind the kitchen door"},
                                       {"grip_force=12.5N works best for the ceramic cup"},
                                       {"wheel odometry drifts on the polished floor"},
                                       {"Lidar gets confused by glass walls in the lobby"},
                                       {"机械臂抓取杯子时力度应设为12牛"}});
    CHECK(batch.size() == 5);
    CHECK(batch[0].has_embedding && batch[1].has_embedding && batch[2].has_embedding);
    CHECK(batch[3].duplicate && batch[3].memory_id == lidar.memory_id && !batch[3].has_embedding);
    CHECK(!batch[4].duplicate && !batch[4].has_embedding);  // not representable by the English model

    // No word in common with the memory: found through its vector.
    const auto r = db.recall("transparent surfaces fool the laser scanner", {}, Json::Render);
    CHECK(!r.hits.empty() && r.hits[0].memory.id == lidar.memory_id);
    CHECK(r.mode == robotmem::SearchMode::Hybrid || r.mode == robotmem::SearchMode::VecOnly);
    CHECK(check::contains(r.to_json(), robotmem::to_string(r.mode)));
    const auto words = db.recall("lidar glass walls");
    CHECK(words.mode == robotmem::SearchMode::Hybrid && words.hits.at(0).memory.id == lidar.memory_id);
    CHECK(db.recall("*").mode == robotmem::SearchMode::Scan);

    const auto none = db.reembed();
    CHECK(none.embedded == 0 && none.remaining == 0 && !none.rebuilt);
    {
        auto po = check::test_options(dir.file("hybrid.db"));
        po.embeddings = false;
        const Db plain = Db::open(po);
        CHECK(!plain.learn("the forklift horn is too quiet in the loading bay").has_embedding);
        CHECK(!plain.learn("floor wax in aisle 3 makes the wheels slip").has_embedding);
        const auto ps = plain.embedding_status();
        CHECK(ps.state == EmbedState::Unavailable && ps.stored_model == s.model && ps.pending == 2);
    }
    const auto one = db.try_reembed(1);
    CHECK(one.ok() && one->embedded == 1 && one->remaining == 1 && !one->rebuilt);
    const auto rest = db.reembed();
    CHECK(rest.embedded == 1 && rest.remaining == 0);
    CHECK(db.embedding_status().pending == 0);
}

void test_full(const check::TempDir& dir) {
    auto o = check::test_options(dir.file("full.db"));
    o.max_db_bytes = 256 * 1024;
    Db db = Db::open(o);
    Status last = Status::Ok;
    std::string message;
    for (int i = 0; i < 20000 && last == Status::Ok; ++i) {
        auto r = db.try_learn("filler memory number " + std::to_string(i) + " " + std::string(200, static_cast<char>('a' + i % 26)));
        last = r.status();
        message = r.message();
    }
    CHECK(last == Status::Full && !message.empty());
    CHECK(!db.recall("filler memory").hits.empty());  // still usable
}

}  // namespace

int main() {
    // No model from the environment: these handles run BM25 only (the model test
    // in test_wrapper opens its model through ROBOTMEM_TEST_* explicitly).
    ::unsetenv("ROBOTMEM_MODEL_DIR");
    ::unsetenv("ROBOTMEM_ORT_LIBRARY");
    check::TempDir dir;
    test_library_functions();
    test_result_type();
    test_builders_render();
    test_open(dir);
    {
        const Db db = Db::open(check::test_options(dir.file("api.db")));
        const std::int64_t id = test_learn_recall(db);
        test_error_mapping(db);
        test_embedded_nul(db, id);
        test_try_variants(db);
        test_builders_filter(db);
        test_perception(db);
        test_update_and_sessions(db);
        test_json(db);
        db.flush();
    }
    test_move_semantics(dir.file("api.db"));
    test_full(dir);
    const auto model = check::model_paths("cpp.test_wrapper hybrid recall");
    test_embedding_options(dir, model);  // before test_hybrid loads ONNX Runtime
    test_embeddings_off(dir);
    if (model) test_hybrid(dir, *model);
    std::puts("test_wrapper: OK");
    return 0;
}
