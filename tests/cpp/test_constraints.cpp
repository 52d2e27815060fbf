// Constraints over all memories through the C++ wrapper (issue 12): with
// context_filter, session_id or spatial_sort a recall returns min(n, memories
// satisfying them) — the query's matches first, then the newest others; with
// spatial_sort the true n nearest whatever the query's words — and each hit says
// whether it matched. Most memories share no word with the queries. Runs on a
// BM25-only handle and, with the model, on a hybrid one.
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using robotmem::Db;
using robotmem::RecallOptions;

struct Mem {
    std::int64_t id;
    double x, y;
    bool success;
    bool shares;  // holds a word of the query "lidar reflection"
};

// Each text ends with the memory's number (dedup never merges different numbers).
const char* const kTexts[] = {
    "pallet wrapped before the forklift arrived at dock",
    "camera exposure lowered for the bright loading bay",
    "wheel odometry drifted on polished concrete in aisle",
    "charging contact cleaned after voltage dropped on station",
    "lidar reflection from the glass door confused the planner at gate",
};

std::vector<Mem> learn_all(const Db& db) {
    std::vector<Mem> mems;
    for (int i = 0; i < 30; ++i) {
        const double a = i * 1.3, r = 0.4 + i * 0.3;
        Mem m{0, r * std::cos(a), r * std::sin(a), i % 3 != 0, i % 5 == 4};
        const std::string text = std::string(kTexts[i % 5]) + " " + std::to_string(i);
        robotmem::LearnOptions o;
        o.collection = "yard";
        o.context = std::string(R"({"task": {"success": )") + (m.success ? "true" : "false") +
                    R"(}, "spatial": {"pos": [)" + std::to_string(m.x) + ", " + std::to_string(m.y) + "]}}";
        const auto r2 = db.learn(text, o);
        CHECK(!r2.duplicate);
        m.id = r2.memory_id;
        mems.push_back(m);
    }
    return mems;
}

RecallOptions yard(int n) {
    RecallOptions o;
    o.collection = "yard";
    o.n = n;
    return o;
}

const Mem& find(const std::vector<Mem>& mems, std::int64_t id) {
    const auto it = std::find_if(mems.begin(), mems.end(), [&](const Mem& m) { return m.id == id; });
    CHECK(it != mems.end());
    return *it;
}

void check_db(const Db& db, bool hybrid) {
    const auto mems = learn_all(db);
    std::size_t successes = 0;
    for (const auto& m : mems) successes += m.success;

    // Filter: every successful memory, matches first, then the rest newest first.
    auto r = db.recall("lidar reflection", yard(100).filter_eq("task.success", true));
    CHECK(r.hits.size() == successes);
    std::size_t first_unmatched = r.hits.size();
    for (std::size_t k = 0; k < r.hits.size(); ++k) {
        const auto& m = find(mems, r.hits[k].memory.id);
        CHECK(m.success);
        if (m.shares) CHECK(r.hits[k].matched && r.hits[k].lexical && *r.hits[k].lexical > 0.0);
        if (!hybrid) CHECK(r.hits[k].matched == m.shares);
        if (!r.hits[k].matched && first_unmatched == r.hits.size()) first_unmatched = k;
        if (k > first_unmatched) {
            CHECK(!r.hits[k].matched && r.hits[k].score == 0.0);
            CHECK(r.hits[k].memory.id < r.hits[k - 1].memory.id);
        }
    }
    CHECK(hybrid ? r.query_vector == robotmem::QueryVector::Embedded : r.query_vector == robotmem::QueryVector::None);

    // Spatial sort + filter, a query no memory shares a word with: the true nearest.
    const double tx = -1.5, ty = 2.0;
    std::vector<Mem> want;
    for (const auto& m : mems)
        if (m.success) want.push_back(m);
    const auto dist = [&](const Mem& m) { return std::hypot(m.x - tx, m.y - ty); };
    std::sort(want.begin(), want.end(), [&](const Mem& a, const Mem& b) { return dist(a) < dist(b); });
    r = db.recall("hydraulic elbow stiffness", yard(7).filter_eq("task.success", true).spatial("spatial.pos", {tx, ty}));
    CHECK(r.hits.size() == 7);
    for (std::size_t k = 0; k < r.hits.size(); ++k) {
        CHECK(r.hits[k].memory.id == want[k].id);
        CHECK(r.hits[k].distance && std::fabs(*r.hits[k].distance - dist(want[k])) < 1e-5);
        if (!hybrid) CHECK(!r.hits[k].matched);
    }

    // Session: all of its memories, whatever the query.
    const auto s = db.start_session("yard");
    std::vector<std::int64_t> in;
    for (const char* t : {"tote stacked three high near the mezzanine", "mezzanine lift waited for the safety gate"}) {
        robotmem::LearnOptions o;
        o.collection = "yard";
        o.session_id = s.session_id;
        in.push_back(db.learn(t, o).memory_id);
    }
    auto so = yard(10);
    so.session_id = s.session_id;
    r = db.recall("lidar reflection", so);
    CHECK(r.hits.size() == 2 && std::count_if(r.hits.begin(), r.hits.end(), [&](const robotmem::Hit& h) {
                                    return h.memory.id == in[0] || h.memory.id == in[1];
                                }) == 2);

    // No constraint: matches only.
    r = db.recall("lidar reflection", yard(100));
    for (const auto& h : r.hits) CHECK(h.matched);
    if (!hybrid) CHECK(r.hits.size() == 6);
}

}  // namespace

int main() {
    ::unsetenv("ROBOTMEM_MODEL_DIR");
    ::unsetenv("ROBOTMEM_ORT_LIBRARY");
    check::TempDir dir;
    check::each_mode(dir, "cpp.test_constraints hybrid recall", check_db);
    std::puts("test_constraints: OK");
    return 0;
}
