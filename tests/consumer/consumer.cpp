// A C++ program outside the robotmem tree: the header-only wrapper through the
// installed package (robotmem::cpp) or pkg-config.
#include <robotmem/robotmem.hpp>

#include <cstring>
#include <iostream>

#ifndef CONSUMER_VARIANT
#define CONSUMER_VARIANT "unknown"
#endif

int main() {
    if (std::strcmp(robotmem::version(), RM_VERSION_STRING) != 0) {
        std::cerr << "header " << RM_VERSION_STRING << " but library " << robotmem::version() << "\n";
        return 1;
    }
    try {
        const auto db = robotmem::Db::open(robotmem::OpenOptions::in_memory());
        robotmem::LearnOptions lo;
        lo.context = R"({"task": {"name": "tray", "success": true}})";
        const auto learned = db.learn("lift the tray with both arms at 0.2 m/s", lo);
        const auto r = db.recall("tray arms", robotmem::RecallOptions().filter_eq("task.success", true));
        const bool ok = r.hits.size() == 1 && r.hits[0].memory.id == learned.memory_id && r.hits[0].score == 1.0;
        std::cout << "consumer (" << CONSUMER_VARIANT << "): robotmem " << robotmem::version() << ", recalled #"
                  << (r.hits.empty() ? -1 : r.hits[0].memory.id) << ": "
                  << (r.hits.empty() ? "-" : r.hits[0].memory.content) << "\n";
        const auto missing = db.try_get_memory(learned.memory_id + 1000);
        if (missing.status() != robotmem::Status::NotFound) {
            std::cerr << "consumer (" << CONSUMER_VARIANT << "): expected RM_NOT_FOUND, got "
                      << robotmem::status_name(missing.status()) << "\n";
            return 1;
        }
        return ok ? 0 : 1;
    } catch (const robotmem::Error& e) {
        std::cerr << "consumer (" << CONSUMER_VARIANT << "): " << e.what() << "\n";
        return 1;
    }
}
