// Tiny assertion helpers for the robotmem C++ wrapper tests (C++17).
#ifndef ROBOTMEM_TEST_CHECK_HPP
#define ROBOTMEM_TEST_CHECK_HPP

#include <robotmem/robotmem.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace check {

/// Temporary directories alive in this test program (removed also when a CHECK fails:
/// std::exit runs no destructors of local objects).
inline std::vector<std::filesystem::path>& temp_dirs() {
    static std::vector<std::filesystem::path> dirs;
    return dirs;
}

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
    std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what.c_str());
    for (const auto& d : temp_dirs()) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
    }
    std::exit(1);
}

inline bool contains(std::string_view haystack, std::string_view needle) {
    return haystack.find(needle) != std::string_view::npos;
}

/// A fresh private directory for database files, removed with its content.
class TempDir {
public:
    TempDir() {
        const char* tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/robotmem-cpp-test-XXXXXX";
        if (!mkdtemp(templ.data())) {
            std::perror("mkdtemp");
            std::exit(1);
        }
        path_ = templ;
        temp_dirs().push_back(path_);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
        auto& dirs = temp_dirs();
        dirs.erase(std::remove(dirs.begin(), dirs.end(), path_), dirs.end());
    }
    std::string file(std::string_view name) const { return (path_ / std::string(name)).string(); }

private:
    std::filesystem::path path_;
};

/// Whether recall(query) on `db` returns memory `id`.
inline bool recalled(const robotmem::Db& db, const std::string& query, std::int64_t id) {
    for (const auto& h : db.recall(query).hits)
        if (h.memory.id == id) return true;
    return false;
}

/// Options for a database file with no fsync per commit (tests need none).
inline robotmem::OpenOptions test_options(const std::string& path) {
    auto o = robotmem::OpenOptions::file(path);
    o.durability = robotmem::Durability::Normal;
    return o;
}

struct ModelPaths {
    std::string dir;
    std::string runtime;
};

/// The model of ROBOTMEM_TEST_MODEL_DIR / ROBOTMEM_TEST_ORT_LIBRARY for the part
/// of a test named `what`, or nullopt (SKIPPED loudly; a failure when
/// ROBOTMEM_REQUIRE_MODEL=1 unless ROBOTMEM_TEST_NO_MODEL says why it is left out).
inline std::optional<ModelPaths> model_paths(const char* what) {
    const auto env = [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v ? v : "");
    };
    const std::string dir = env("ROBOTMEM_TEST_MODEL_DIR"), runtime = env("ROBOTMEM_TEST_ORT_LIBRARY");
    const std::string off = env("ROBOTMEM_TEST_NO_MODEL");
    std::string why;
    bool required = env("ROBOTMEM_REQUIRE_MODEL") == "1";
    namespace fs = std::filesystem;
    if (!off.empty()) {
        why = off;
        required = false;
    } else if (dir.empty() || runtime.empty()) {
        why = "ROBOTMEM_TEST_MODEL_DIR / ROBOTMEM_TEST_ORT_LIBRARY are not set";
    } else if (!fs::is_regular_file(fs::path(dir) / "model.onnx") || !fs::is_regular_file(fs::path(dir) / "tokenizer.json")) {
        why = "no model in " + dir + " (run scripts/fetch-model.sh)";
    } else if (!fs::is_regular_file(runtime)) {
        why = "no ONNX Runtime library " + runtime + " (run scripts/fetch-model.sh)";
    } else {
        return ModelPaths{dir, runtime};
    }
    std::printf("SKIPPED %s: %s\n", what, why.c_str());
    std::fprintf(stderr, "SKIPPED %s: %s\n", what, why.c_str());
    if (required) fail(__FILE__, __LINE__, "the model is required (ROBOTMEM_REQUIRE_MODEL=1): " + why);
    return std::nullopt;
}

/// Runs `check_db(db, hybrid)` on a BM25-only database in `dir`, then, when the
/// test model is there (see model_paths), on one with the model.
template <class F>
void each_mode(const TempDir& dir, const char* what, F check_db) {
    {
        auto o = test_options(dir.file("bm25.db"));
        o.embeddings = false;
        check_db(robotmem::Db::open(o), false);
    }
    if (const auto model = model_paths(what)) {
        auto o = test_options(dir.file("hybrid.db"));
        o.model_dir = model->dir;
        o.ort_library = model->runtime;
        const robotmem::Db db = robotmem::Db::open(o);
        if (db.embedding_status().state != robotmem::EmbedState::Ready) fail(__FILE__, __LINE__, "the model is not ready");
        check_db(db, true);
    }
}

}  // namespace check

#define CHECK(expr)                                                  \
    do {                                                             \
        if (!(expr)) ::check::fail(__FILE__, __LINE__, #expr);       \
    } while (0)

/// `expr` must throw robotmem::Error with status `want` and a message containing `needle`.
#define CHECK_THROWS(expr, want, needle)                                                                  \
    do {                                                                                                  \
        bool thrown_ = false;                                                                             \
        try {                                                                                             \
            (void)(expr);                                                                                 \
        } catch (const robotmem::Error& e_) {                                                             \
            thrown_ = true;                                                                               \
            if (e_.code() != (want) || !::check::contains(e_.message(), needle))                          \
                ::check::fail(__FILE__, __LINE__,                                                         \
                              std::string(#expr) + " threw " + e_.what() + "; expected " +                \
                                  robotmem::status_name(want) + " with \"" + (needle) + "\"");            \
            if (!::check::contains(e_.what(), robotmem::status_name(want)))                               \
                ::check::fail(__FILE__, __LINE__, std::string("what() lacks the status name: ") + e_.what()); \
        }                                                                                                 \
        if (!thrown_) ::check::fail(__FILE__, __LINE__, std::string(#expr) + " did not throw");           \
    } while (0)

/// A Result must hold status `want` and (on failure) a message containing `needle`.
#define CHECK_RESULT(result_expr, want, needle)                                                         \
    do {                                                                                                \
        const auto& r_ = (result_expr);                                                                 \
        if (r_.status() != (want) || !::check::contains(r_.message(), needle))                          \
            ::check::fail(__FILE__, __LINE__,                                                           \
                          std::string(#result_expr) + " gave " + robotmem::status_name(r_.status()) +   \
                              " \"" + r_.message() + "\"; expected " + robotmem::status_name(want) +    \
                              " with \"" + (needle) + "\"");                                            \
    } while (0)

#endif  // ROBOTMEM_TEST_CHECK_HPP
