// One robotmem::Db shared by 8 std::threads (learn / recall / get / errors) for
// a bounded time, then a close() racing the threads' calls.
#include "check.hpp"

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using robotmem::Db;
using robotmem::Status;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kThreads = 8;
constexpr auto kDuration = std::chrono::milliseconds(1500);
constexpr std::size_t kMaxPerThread = 1000;

struct Worker {
    std::vector<std::int64_t> ids;
    std::vector<std::string> texts;
    std::size_t recalls = 0, errors = 0;
};

std::string text_of(int thread, std::size_t i) {
    return "thread " + std::to_string(thread) + " stored grasp " + std::to_string(i) + " with force " +
           std::to_string(i * 7 + static_cast<std::size_t>(thread)) + "N";
}

void run(const Db& db, int index, Worker& w) {
    const auto deadline = Clock::now() + kDuration;
    robotmem::RecallOptions ro;
    ro.n = 3;
    robotmem::RecallOptions filtered = robotmem::RecallOptions().filter_eq("robot.thread", index);
    filtered.n = 100;
    robotmem::LearnOptions lo;
    lo.context = R"({"robot": {"thread": )" + std::to_string(index) + "}}";
    while (w.ids.size() < kMaxPerThread && Clock::now() < deadline) {
        const std::size_t i = w.ids.size();
        const std::string text = text_of(index, i);
        const auto l = db.learn(text, lo);
        CHECK(!l.duplicate && l.memory_id > 0);
        w.ids.push_back(l.memory_id);
        w.texts.push_back(text);
        CHECK(db.get_memory(l.memory_id).memory.content == text);
        const auto r = db.recall(i % 2 ? "grasp force" : "*", ro);
        CHECK(!r.hits.empty() && r.hits.size() <= 3 && !r.hits[0].memory.content.empty());
        ++w.recalls;
        if (i % 25 == 0) {
            // Errors are per thread: each message is this thread's own, whatever the others do.
            const auto bad = db.try_get_memory(-static_cast<std::int64_t>(i) - 1);
            CHECK(bad.status() == Status::InvalidArgument && check::contains(bad.message(), "memory_id"));
            try {
                db.forget(w.ids.front(), "");
                CHECK(false);
            } catch (const robotmem::Error& e) {
                CHECK(e.code() == Status::InvalidArgument && check::contains(e.message(), "reason"));
            }
            w.errors += 2;
            const auto mine = db.recall("stored grasp", filtered);
            CHECK(!mine.hits.empty());
            for (const auto& h : mine.hits) CHECK(check::contains(h.memory.content, "thread " + std::to_string(index) + " "));
            db.flush();
        }
    }
}

// Threads call a Db while the main thread closes it: every call returns Ok until
// the close, then Closed; never another status, never a crash.
void close_race(const std::string& path) {
    Db db = Db::open(check::test_options(path));
    std::atomic<int> started{0};
    std::atomic<bool> bad{false};
    std::vector<std::thread> threads;
    std::vector<std::size_t> closed_seen(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            ++started;
            const auto deadline = Clock::now() + std::chrono::seconds(10);
            for (std::size_t i = 0; Clock::now() < deadline; ++i) {
                Status st;
                if (i % 2)
                    st = db.try_recall("closing race").status();
                else
                    st = db.try_learn("closing race note " + std::to_string(t) + " " + std::to_string(i)).status();
                if (st == Status::Closed) {
                    if (++closed_seen[static_cast<std::size_t>(t)] > 3) break;
                } else if (st != Status::Ok) {
                    bad = true;
                    break;
                }
            }
        });
    }
    while (started < 4) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    db.close();
    for (auto& th : threads) th.join();
    CHECK(!bad);
    for (auto n : closed_seen) CHECK(n > 3);
}

}  // namespace

int main() {
    // No model from the environment: these handles run BM25 only (the model test
    // in test_wrapper opens its model through ROBOTMEM_TEST_* explicitly).
    ::unsetenv("ROBOTMEM_MODEL_DIR");
    ::unsetenv("ROBOTMEM_ORT_LIBRARY");
    check::TempDir dir;
    const std::string path = dir.file("threads.db");
    std::size_t total = 0;
    const auto t0 = Clock::now();
    {
        const Db db = Db::open(check::test_options(path));
        std::vector<Worker> workers(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back(run, std::cref(db), t, std::ref(workers[static_cast<std::size_t>(t)]));
        for (auto& th : threads) th.join();
        // Every acknowledged write is there, with its own content.
        for (const auto& w : workers) {
            CHECK(!w.ids.empty());
            for (std::size_t i = 0; i < w.ids.size(); ++i) CHECK(db.get_memory(w.ids[i]).memory.content == w.texts[i]);
            total += w.ids.size();
        }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    CHECK(secs < 60.0);
    {
        const Db db = Db::open(check::test_options(path));  // persisted across a reopen
        auto r = db.recall("stored grasp", robotmem::RecallOptions().filter_eq("robot.thread", 3));
        CHECK(!r.hits.empty());
    }
    close_race(dir.file("close.db"));
    std::printf("test_threads: OK (%d threads, %zu memories in %.2f s)\n", kThreads, total, secs);
    return 0;
}
