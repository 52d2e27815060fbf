// OpenOptions::clock through the C++ wrapper: a simulated clock (a lambda over an
// atomic, as a ROS 2 node's now() would be) decides creation and expiry; the copy
// of the std::function lives as long as the handle, also after release(); a clock
// that throws reads as the system clock; a view from as_of() outlives the Db.
#include "check.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

using robotmem::Db;
using robotmem::Status;

constexpr std::int64_t kStart = 1935630121000;  // 2031-05-04T03:02:01.000Z

// The simulation's time; the clock's copies hold it (a weak_ptr sees them go).
struct Sim {
    std::atomic<std::int64_t> ms{kStart};
};

}  // namespace

int main() {
    check::TempDir dir;
    auto sim = std::make_shared<Sim>();
    std::weak_ptr<Sim> watch = sim;
    {
        auto opts = check::test_options(dir.file("clock.db"));
        opts.clock = [sim] { return sim->ms.load(); };
        Db db = Db::open(opts);
        opts.clock = nullptr;  // the Db keeps its own copy

        robotmem::LearnOptions o;
        o.ttl_seconds = 600.0;
        const auto id = db.learn("the loading bay door is stuck half open", o).memory_id;
        const auto m = db.get_memory(id).memory;
        CHECK(m.created_at == "2031-05-04T03:02:01.000Z");
        CHECK(m.expires_at && *m.expires_at == "2031-05-04T03:12:01.000Z");
        CHECK(check::recalled(db, "loading bay door", id));
        sim->ms += 600 * 1000;
        CHECK(!check::recalled(db, "loading bay door", id));
        CHECK(db.get_memory(id).memory.expired);
        CHECK(db.try_as_of("2031-05-04T03:12:01.001Z").status() == Status::InvalidArgument);
        Db view = db.as_of("2031-05-04T03:05:00.000Z");

        // release(): the handle keeps the clock; closing it through C frees it.
        rm_db* raw = db.release();
        sim->ms -= 600 * 1000;
        CHECK(!db.is_open());
        Db again(raw);
        CHECK(check::recalled(again, "loading bay door", id));
        again.close();
        sim.reset();
        CHECK(watch.expired());  // the library freed its copy at close
        // The view needs none of it.
        CHECK(check::recalled(view, "loading bay door", id));
    }
    {
        // A clock that throws is no time: the system clock is read.
        auto opts = check::test_options(dir.file("throws.db"));
        opts.clock = []() -> std::int64_t { throw std::runtime_error("no /clock message yet"); };
        const Db db = Db::open(opts);
        const auto id = db.learn("the robot started before the simulator", {}).memory_id;
        const auto created = db.get_memory(id).memory.created_at;
        CHECK(created.compare(0, 4, "2031") != 0 && created > "2026");
    }
    {
        // A failed open frees the copy too.
        auto counted = std::make_shared<int>(0);
        std::weak_ptr<int> w = counted;
        auto opts = check::test_options(dir.file("bad.db"));
        opts.default_ttl_json = R"({"obstacles": -5})";
        opts.clock = [counted] { return kStart; };
        counted.reset();
        CHECK(Db::try_open(opts).status() == Status::InvalidArgument);
        opts.clock = nullptr;
        CHECK(w.expired());
    }
    std::puts("test_clock: OK");
    return 0;
}
