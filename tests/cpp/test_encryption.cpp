// Encryption at rest through the C++ wrapper: OpenOptions::key / key_file,
// Status::Key for a missing or wrong key, Db::rekey / try_rekey, and
// encryption_available(). A library built without encryption refuses a key
// with Status::InvalidArgument.
#include "check.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace {

using robotmem::Db;
using robotmem::Status;

}  // namespace

int main() {
    check::TempDir dir;
    const std::array<std::uint8_t, 32> key{1, 2, 3, 4, 5, 6, 7, 8};
    std::array<std::uint8_t, 32> other{};
    other.fill(0xa5);
    auto opts = check::test_options(dir.file("secret.db"));
    opts.key = key;
    if (!robotmem::encryption_available()) {
        CHECK(Db::try_open(opts).status() == Status::InvalidArgument);
        std::puts("test_encryption: OK (built without encryption: a key is refused)");
        return 0;
    }
    {
        const Db db = Db::open(opts);
        db.learn("the mobile base drifts left on the polished floor");
        const Db second = Db::open(opts);
        CHECK(db.try_rekey(other).status() == Status::Busy);  // not the file's only user
    }
    auto none = check::test_options(dir.file("secret.db"));
    CHECK(Db::try_open(none).status() == Status::Key);
    auto wrong = opts;
    wrong.key = other;
    CHECK_THROWS(Db::open(wrong), Status::Key, "key is wrong");
    {
        const Db db = Db::open(opts);
        db.rekey(other);
        CHECK(db.recall("polished floor").hits.size() == 1);
    }
    CHECK(Db::try_open(opts).status() == Status::Key);
    const Db db = Db::open(wrong);
    CHECK(db.recall("mobile base drifts").hits.size() == 1);
    std::puts("test_encryption: OK");
    return 0;
}
