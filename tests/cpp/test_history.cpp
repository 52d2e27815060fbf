// History through the C++ wrapper (issue 30): Db::history (every version with
// its cause and times, JSON) and Db::as_of (a read-only Db of the database as it
// was: recall and get_memory of then, writes refused), BM25 and, with the model,
// hybrid recall over the texts of then.
#include "check.hpp"

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>
#include <thread>

namespace {

using robotmem::Db;
using robotmem::Status;

/// The time now as robotmem writes times, after a pause so that what happened
/// before is strictly earlier (stored times have milliseconds).
std::string mark() {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    const auto now = std::chrono::system_clock::now();
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char out[96];
    std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    return out;
}

void check_db(const Db& db, bool hybrid) {
    const auto id = db.learn("the left gripper pad is worn; grip force 12 N holds mugs").memory_id;
    const std::string t1 = mark();
    db.update(id, "the left gripper pad was replaced; grip force 8 N holds mugs");
    db.forget(id, "the gripper was swapped for a suction cup");
    const std::string t2 = mark();

    const auto h = db.history(id, robotmem::Json::Render);
    CHECK(h.memory_id == id && h.versions.size() == 3);
    CHECK(h.versions[0].cause == "learn" && h.versions[1].cause == "update" && h.versions[2].cause == "forget");
    CHECK(check::contains(h.versions[0].content, "worn") && check::contains(h.versions[1].content, "replaced"));
    CHECK(h.versions[2].status == robotmem::MemoryStatus::Invalidated);
    CHECK(h.versions[2].invalidated_reason == "the gripper was swapped for a suction cup");
    CHECK(h.versions[0].valid_to == h.versions[1].valid_from && !h.versions[2].valid_to);
    CHECK(*h.versions[0].valid_to > t1 && h.versions[2].valid_from < t2);
    CHECK(check::contains(h.to_json(), "\"cause\":\"update\""));
    CHECK_THROWS(db.history(987654321), Status::NotFound, "987654321");
    CHECK(db.try_history(0).status() == Status::InvalidArgument);

    const Db then = db.as_of(t1);
    const auto m = then.get_memory(id).memory;
    CHECK(check::contains(m.content, "worn") && m.status == robotmem::MemoryStatus::Active);
    const auto r = then.recall("worn gripper pad");
    CHECK(r.hits.size() == 1 && r.hits[0].memory.id == id);
    if (hybrid) {
        // The vector of then is the text of then's: the query that is that text
        // has cosine 1 (the stored vector is of the replaced text).
        const auto same = then.recall("the left gripper pad is worn; grip force 12 N holds mugs");
        CHECK(same.mode == robotmem::SearchMode::Hybrid && same.hits.size() == 1);
        CHECK(same.hits[0].cosine && *same.hits[0].cosine > 0.999);
    }
    CHECK(!check::recalled(then, "replaced", id));
    CHECK_THROWS(then.learn("a new fact about the dock"), Status::ReadOnly, "read-only");
    CHECK(then.try_as_of(t1).status() == Status::InvalidArgument);
    CHECK(db.as_of(t2).get_memory(id).memory.status == robotmem::MemoryStatus::Invalidated);
    CHECK(!check::recalled(db.as_of(t2), "gripper", id));
    CHECK(db.try_as_of("2999-01-01T00:00:00Z").status() == Status::InvalidArgument);
    CHECK(db.try_as_of("not a time").status() == Status::InvalidArgument);
    CHECK(db.try_as_of(std::string("2026\0", 5)).status() == Status::InvalidArgument);
    CHECK(Db().try_as_of(t1).status() == Status::Closed);
}

}  // namespace

int main() {
    check::TempDir dir;
    check::each_mode(dir, "cpp.test_history hybrid recall as of a past time", check_db);
    std::puts("test_history: OK");
    return 0;
}
