// The wrapper in a program built with -fno-exceptions (common in embedded and
// real-time code): the try_* API works; a checked access to a failure aborts.
#include <robotmem/robotmem.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#if ROBOTMEM_EXCEPTIONS || defined(__cpp_exceptions)
#error "this test must be compiled with -fno-exceptions"
#endif

#define CHECK(expr)                                                              \
    do {                                                                         \
        if (!(expr)) {                                                           \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr); \
            std::exit(1);                                                        \
        }                                                                        \
    } while (0)

using robotmem::Status;

// Runs `f` in a child process, which must die of SIGABRT.
template <class F>
bool aborts(F f) {
    const pid_t pid = fork();
    if (pid == 0) {
        std::fclose(stderr);  // the abort message is expected; keep the log clean
        f();
        std::_Exit(0);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

int main() {
    // No model from the environment: these handles run BM25 only (the model test
    // in test_wrapper opens its model through ROBOTMEM_TEST_* explicitly).
    ::unsetenv("ROBOTMEM_MODEL_DIR");
    ::unsetenv("ROBOTMEM_ORT_LIBRARY");
    auto opened = robotmem::Db::try_open(robotmem::OpenOptions::in_memory());
    CHECK(opened.ok());
    const robotmem::Db db = std::move(*opened);
    robotmem::LearnOptions lo;
    lo.context = R"({"task": {"success": true}, "params": {"force": {"value": 12.5}}})";
    auto l = db.try_learn("grasp of red mug succeeded at 12.5N", lo, robotmem::Json::Render);
    CHECK(l.ok() && l->memory_id > 0 && l->json && l->to_json().front() == '{');
    auto r = db.try_recall("grasp mug", robotmem::RecallOptions()
                                            .filter_eq("task.success", true)
                                            .filter("params.force.value", robotmem::Op::Lt, 15));
    CHECK(r.ok() && r->hits.size() == 1 && r->hits[0].memory.id == l->memory_id);
    auto blank = db.try_learn(" ");
    CHECK(blank.status() == Status::InvalidArgument && blank.message().find("insight") != std::string::npos);
    auto nul = db.try_recall(std::string_view("a\0b", 3));
    CHECK(nul.status() == Status::InvalidArgument && nul.message().find("NUL") != std::string::npos);
    auto nan = db.try_recall("grasp", robotmem::RecallOptions().spatial("p", {0.0 / 0.0}));
    CHECK(nan.status() == Status::InvalidArgument);
    CHECK(db.try_get_memory(l->memory_id + 1).status() == Status::NotFound);
    CHECK(db.try_flush().ok());

    // What would throw aborts instead: a checked access to a failure, a plain method failing.
    CHECK(aborts([&] { (void)blank.value(); }));
    CHECK(aborts([&] { (void)db.get_memory(l->memory_id + 1); }));
    CHECK(aborts([&] { (void)r->to_json(); }));
    CHECK(!aborts([&] { (void)db.get_memory(l->memory_id); }));

    // The embedding side (no model in this process: BM25 only).
    auto st = db.try_embedding_status();
    CHECK(st.ok() && st->state == robotmem::EmbedState::Unavailable && !st->reason.empty());
    auto batch = db.try_learn_batch({{"push of the blue box failed at 3N"}, {"grasp of red mug succeeded at 12.5N"}});
    CHECK(batch.ok() && batch->size() == 2 && !(*batch)[0].duplicate && (*batch)[1].duplicate);
    CHECK((*batch)[1].memory_id == l->memory_id);
    CHECK(db.try_learn_batch({{"fine"}, {" "}}).status() == Status::InvalidArgument);
    CHECK(db.try_reembed().status() == Status::EmbeddingUnavailable);
    CHECK(aborts([&] { (void)db.reembed(); }));

    robotmem::Db moved = robotmem::Db();
    CHECK(moved.try_recall("x").status() == Status::Closed);
    std::puts("test_no_exceptions: OK");
    return 0;
}
