// Retention through the C++ wrapper (issue 30): OpenOptions::max_memories /
// max_memories_json / evict_protected, LearnResult / PerceptionResult::evicted,
// Status::OverBudget (nothing written), Db::purge / try_purge, hostile options.
#include "check.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace {

using robotmem::Db;
using robotmem::Status;

}  // namespace

int main() {
    check::TempDir dir;
    auto opts = check::test_options(dir.file("budget.db"));
    opts.max_memories = 3;
    {
        const Db db = Db::open(opts);
        const auto c = db.learn("the arm must never enter zone 7 while people are inside");
        const auto a = db.learn("conveyor 1 stopped for 20 seconds at noon");
        const auto b = db.learn("conveyor 2 stopped for 30 seconds at noon");
        CHECK(a.evicted.empty() && b.evicted.empty());
        db.forget(b.memory_id, "wrong sensor");
        const auto n = db.learn("conveyor 3 stopped for 40 seconds at noon");
        CHECK(n.evicted == std::vector<std::int64_t>{b.memory_id});
        const auto p = db.save_perception("lidar sweep of aisle 3");
        CHECK(p.evicted == std::vector<std::int64_t>{a.memory_id});
        CHECK(!check::recalled(db, "conveyor stopped noon", a.memory_id));
        CHECK(db.try_get_memory(a.memory_id).status() == Status::NotFound);
        CHECK(db.get_memory(c.memory_id).memory.category == "constraint");
    }
    opts.max_memories = 1;
    {
        const Db db = Db::open(opts);
        CHECK_THROWS(db.learn("conveyor 4 stopped for 50 seconds at noon"), Status::OverBudget, "protected");
        CHECK(db.try_learn("conveyor 4 stopped for 50 seconds at noon").status() == Status::OverBudget);
    }
    opts.evict_protected = true;
    {
        const Db db = Db::open(opts);
        CHECK(db.learn("conveyor 4 stopped for 50 seconds at noon").evicted.size() == 3);
    }

    const Db db = Db::open(check::test_options(dir.file("purge.db")));
    const auto gone = db.learn("dock 2 is free at 10");
    db.forget(gone.memory_id, "stale");
    db.learn("dock 3 is free at 11");
    CHECK(db.purge(3600.0).purged == 0);
    const auto r = db.purge(0.0);
    CHECK(r.purged == 1 && r.batches == 1 && r.live_bytes > 0);
    CHECK(db.try_get_memory(gone.memory_id).status() == Status::NotFound);
    CHECK_THROWS(db.purge(-1.0), Status::InvalidArgument, "older_than_seconds");
    CHECK(db.try_purge(std::numeric_limits<double>::quiet_NaN()).status() == Status::InvalidArgument);

    auto bad = check::test_options(dir.file("bad.db"));
    for (const char* json : {R"({"a": -1})", R"({"a": 1.5})", R"({"a": "5"})", "[1]", R"({"": 3})"}) {
        bad.max_memories_json = json;
        CHECK(Db::try_open(bad).status() == Status::InvalidArgument);
    }
    bad.max_memories_json = std::string("{\"a\": 1}\0x", 10);
    CHECK(Db::try_open(bad).status() == Status::InvalidArgument);
    bad.max_memories_json.reset();
    bad.max_memories = std::numeric_limits<std::uint64_t>::max();
    CHECK(Db::try_open(bad).status() == Status::InvalidArgument);
    std::puts("test_retention: OK");
    return 0;
}
