// Expiry through the C++ wrapper (issue 30): LearnOptions / PerceptionOptions
// ttl_seconds and expires_at, OpenOptions::default_ttl_json, Db::set_expiry, and
// Memory::expires_at / expired; an expired memory leaves recall and is renewed.
#include "check.hpp"

#include <cstdint>
#include <string>

namespace {

using robotmem::Db;
using robotmem::Status;

}  // namespace

int main() {
    check::TempDir dir;
    auto opts = check::test_options(dir.file("expiry.db"));
    opts.default_ttl_json = R"({"obstacles": 3600})";
    const Db db = Db::open(opts);

    robotmem::LearnOptions gone;
    gone.expires_at = "2020-01-01T00:00:00Z";
    const auto g = db.learn("the loading ramp at gate 7 is closed for repairs", gone);
    const auto m = db.get_memory(g.memory_id).memory;
    CHECK(m.expired && m.expires_at && m.status == robotmem::MemoryStatus::Active);
    CHECK(!check::recalled(db, "loading ramp gate 7", g.memory_id));
    db.set_expiry(g.memory_id, 600.0);
    CHECK(check::recalled(db, "loading ramp gate 7", g.memory_id));
    db.set_expiry(g.memory_id, 0.0);
    CHECK(!db.get_memory(g.memory_id).memory.expires_at);

    robotmem::LearnOptions obstacle;
    obstacle.collection = "obstacles";
    const auto o = db.learn("a pallet blocks aisle 4", obstacle);
    CHECK(db.get_memory(o.memory_id).memory.expires_at);  // the collection's default

    robotmem::PerceptionOptions p;
    p.ttl_seconds = 30.0;
    const auto s = db.save_perception("lidar scan of aisle 4 with the pallet", p);
    CHECK(db.get_memory(s.memory_id).memory.expires_at);

    robotmem::LearnOptions bad;
    bad.ttl_seconds = -1.0;
    CHECK_THROWS(db.learn("a fact with a negative lifetime", bad), Status::InvalidArgument, "ttl_seconds");
    CHECK(db.try_set_expiry(g.memory_id, 5.0, "2030-01-01T00:00:00Z").status() == Status::InvalidArgument);
    CHECK(db.try_set_expiry(g.memory_id, 0.0, std::string("a\0b", 3)).status() == Status::InvalidArgument);
    auto bad_default = check::test_options(dir.file("bad.db"));
    bad_default.default_ttl_json = R"({"obstacles": -5})";
    CHECK(Db::try_open(bad_default).status() == Status::InvalidArgument);
    std::puts("test_expiry: OK");
    return 0;
}
