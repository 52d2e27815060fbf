// robotmem::cpp through find_package(robotmem) in an ament_cmake package, under
// `colcon test`: the package version, a learn / recall / session round trip on a
// database file (closed and reopened), context filters, error mapping.
#include <robotmem/robotmem.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>

#ifndef ROBOTMEM_PACKAGE_VERSION
#error "ROBOTMEM_PACKAGE_VERSION (robotmem_VERSION from find_package) must be defined"
#endif

namespace fs = std::filesystem;

namespace {

// A fresh directory under TMPDIR (or /tmp), removed with everything in it.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "robotmem_consumer.XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

constexpr const char* kCtxLight =
    R"({"params": {"force": {"value": 12.5, "unit": "N"}}, "task": {"name": "grasp", "success": true}})";
constexpr const char* kCtxHard =
    R"({"params": {"force": {"value": 18, "unit": "N"}}, "task": {"name": "grasp", "success": true}})";
constexpr const char* kCtxFailed =
    R"({"params": {"force": {"value": 10, "unit": "N"}}, "task": {"name": "grasp", "success": false}})";

robotmem::LearnOptions with_context(const char* context, const std::string& session_id = {}) {
    robotmem::LearnOptions lo;
    lo.context = context;
    lo.session_id = session_id;
    return lo;
}

std::set<std::int64_t> ids(const robotmem::RecallResult& r) {
    std::set<std::int64_t> out;
    for (const auto& h : r.hits) out.insert(h.memory.id);
    return out;
}

}  // namespace

TEST(RobotmemPackage, VersionsAgree) {
    // find_package(robotmem)'s version == the installed header == the loaded library.
    EXPECT_STREQ(ROBOTMEM_PACKAGE_VERSION, RM_VERSION_STRING);
    EXPECT_STREQ(robotmem::version(), RM_VERSION_STRING);
}

TEST(RobotmemPackage, SessionRoundTripOnFile) {
    TempDir dir;
    const std::string path = (dir.path() / "memory.db").string();
    std::string session_id;
    std::int64_t light = 0, hard = 0, failed = 0;
    {
        robotmem::Db db = robotmem::Db::open(robotmem::OpenOptions::file(path));
        const robotmem::Session s = db.start_session("kitchen", R"({"robot": {"id": "arm_1"}})");
        session_id = s.session_id;
        ASSERT_EQ(session_id.size(), 36u);
        EXPECT_EQ(s.collection, "kitchen");

        robotmem::LearnOptions lo = with_context(kCtxLight, session_id);
        lo.collection = "kitchen";
        const auto l1 = db.learn("grasp of red mug succeeded at 12.5N", lo);
        lo = with_context(kCtxHard, session_id);
        lo.collection = "kitchen";
        const auto l2 = db.learn("grasp of red mug succeeded at 18N", lo);
        lo = with_context(kCtxFailed, session_id);
        lo.collection = "kitchen";
        const auto l3 = db.learn("grasp of red mug failed at 10N: slipped", lo);
        for (const auto* l : {&l1, &l2, &l3}) EXPECT_FALSE(l->duplicate);
        light = l1.memory_id;
        hard = l2.memory_id;
        failed = l3.memory_id;
        EXPECT_EQ((std::set<std::int64_t>{light, hard, failed}).size(), 3u);

        // The same insight again is reported, not stored twice.
        lo = with_context(kCtxLight, session_id);
        lo.collection = "kitchen";
        const auto again = db.learn("grasp of red mug succeeded at 12.5N", lo);
        EXPECT_TRUE(again.duplicate);
        EXPECT_EQ(again.memory_id, light);

        robotmem::RecallOptions in_session;
        in_session.collection = "kitchen";
        in_session.session_id = session_id;
        in_session.n = 10;
        const auto r = db.recall("grasp red mug", in_session);
        EXPECT_EQ(ids(r), (std::set<std::int64_t>{light, hard, failed}));
        for (const auto& h : r.hits) EXPECT_EQ(h.memory.session_id.value_or(""), session_id);

        const robotmem::SessionSummary sum = db.end_session(session_id, 0.75);
        EXPECT_EQ(sum.session_id, session_id);
        EXPECT_EQ(sum.memory_count, 3);
        ASSERT_TRUE(sum.outcome_score.has_value());
        EXPECT_DOUBLE_EQ(*sum.outcome_score, 0.75);

        const auto twice = db.try_end_session(session_id, 0.75);
        EXPECT_EQ(twice.status(), robotmem::Status::InvalidState);
        db.close();
        EXPECT_FALSE(db.is_open());
    }
    ASSERT_TRUE(fs::exists(path));

    // Reopened: everything is still there, with its session and context.
    const auto db = robotmem::Db::open(robotmem::OpenOptions::file(path));
    robotmem::RecallOptions q;
    q.collection = "kitchen";
    q.n = 10;
    const auto r = db.recall("grasp red mug", q);
    EXPECT_EQ(ids(r), (std::set<std::int64_t>{light, hard, failed}));
    const auto m = db.get_memory(hard);
    EXPECT_EQ(m.memory.content, "grasp of red mug succeeded at 18N");
    EXPECT_EQ(m.memory.collection, "kitchen");
    EXPECT_EQ(m.memory.session_id.value_or(""), session_id);
    ASSERT_TRUE(m.memory.task_json.has_value());
    EXPECT_NE(m.memory.task_json->find("\"success\""), std::string::npos);

    // The default collection holds none of them.
    EXPECT_TRUE(db.recall("grasp red mug").hits.empty());
}

TEST(RobotmemPackage, ContextFilter) {
    TempDir dir;
    const auto db = robotmem::Db::open(robotmem::OpenOptions::file((dir.path() / "filter.db").string()));
    const auto light = db.learn("grasp of red mug succeeded at 12.5N", with_context(kCtxLight)).memory_id;
    const auto hard = db.learn("grasp of red mug succeeded at 18N", with_context(kCtxHard)).memory_id;
    const auto failed = db.learn("grasp of red mug failed at 10N: slipped", with_context(kCtxFailed)).memory_id;

    // Built filter: successful and under 15 N.
    auto gentle = robotmem::RecallOptions()
                      .filter_eq("task.success", true)
                      .filter("params.force.value", robotmem::Op::Lt, 15.0);
    gentle.n = 10;
    const auto r = db.recall("grasp red mug", gentle);
    ASSERT_EQ(r.hits.size(), 1u);
    EXPECT_EQ(r.hits[0].memory.id, light);
    EXPECT_EQ(gentle.render_context_filter(), R"({"task.success": true, "params.force.value": {"$lt": 15}})");

    // The same filter as raw JSON.
    robotmem::RecallOptions raw;
    raw.context_filter_json(R"({"task.success": true, "params.force.value": {"$lt": 15}})");
    raw.n = 10;
    EXPECT_EQ(ids(db.recall("grasp red mug", raw)), (std::set<std::int64_t>{light}));

    // A range on one path: 10 <= force < 20 and successful -> both successes.
    auto range = robotmem::RecallOptions()
                     .filter("params.force.value", robotmem::Op::Gte, 10)
                     .filter("params.force.value", robotmem::Op::Lt, 20)
                     .filter_eq("task.success", true);
    range.n = 10;
    EXPECT_EQ(ids(db.recall("grasp red mug", range)), (std::set<std::int64_t>{light, hard}));

    // Failures only.
    auto failures = robotmem::RecallOptions().filter_eq("task.success", false);
    failures.n = 10;
    EXPECT_EQ(ids(db.recall("grasp red mug", failures)), (std::set<std::int64_t>{failed}));

    // No match is an empty result, not an error.
    auto none = robotmem::RecallOptions().filter("params.force.value", robotmem::Op::Gt, 100);
    EXPECT_TRUE(db.recall("grasp red mug", none).hits.empty());
}

TEST(RobotmemPackage, Errors) {
    const auto db = robotmem::Db::open(robotmem::OpenOptions::in_memory());
    try {
        (void)db.learn("   ");
        FAIL() << "a blank insight was accepted";
    } catch (const robotmem::Error& e) {
        EXPECT_EQ(e.code(), robotmem::Status::InvalidArgument);
        EXPECT_NE(std::string(e.message()).find("insight"), std::string::npos) << e.what();
    }
    EXPECT_EQ(db.try_get_memory(4242).status(), robotmem::Status::NotFound);
    const auto bad = db.try_recall("grasp", robotmem::RecallOptions().context_filter_json("{not json"));
    EXPECT_EQ(bad.status(), robotmem::Status::InvalidArgument);
}
