// robotmem from an ament_cmake package: one grasping episode is learned into a
// database file, then the next episode asks what worked before.
//
//   robotmem_episode [DB_PATH]     (default: ./robotmem_episode.db)
//
// Exits 0 when the recall with a context filter returns exactly the successful
// grasp under 15 N, 1 otherwise. Running it again on the same file stores nothing
// new (each learn reports the memory it duplicates) and recalls the same memory.
#include <robotmem/robotmem.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace {

struct Attempt {
    const char* insight;
    const char* context;
};

const std::vector<Attempt> kEpisode = {
    {"grasp of red mug succeeded at 12.5N",
     R"({"params": {"force": {"value": 12.5, "unit": "N"}}, "task": {"name": "grasp", "success": true}})"},
    {"grasp of red mug succeeded at 18N",
     R"({"params": {"force": {"value": 18, "unit": "N"}}, "task": {"name": "grasp", "success": true}})"},
    {"grasp of red mug failed at 10N: slipped",
     R"({"params": {"force": {"value": 10, "unit": "N"}}, "task": {"name": "grasp", "success": false}})"},
};

}  // namespace

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "robotmem_episode.db";
    try {
        robotmem::Db db = robotmem::Db::open(robotmem::OpenOptions::file(path));
        std::cout << "robotmem " << robotmem::version() << ", database " << path << "\n";

        // Episode 1: three grasps of the same mug, in one session.
        const robotmem::Session session = db.start_session("", R"({"robot": {"id": "arm_1"}})");
        for (const Attempt& a : kEpisode) {
            robotmem::LearnOptions lo;
            lo.context = a.context;
            lo.session_id = session.session_id;
            const robotmem::LearnResult r = db.learn(a.insight, lo);
            std::cout << "  learned #" << r.memory_id << " (" << r.category << ")"
                      << (r.duplicate ? " already known" : "") << ": " << a.insight << "\n";
        }
        const robotmem::SessionSummary summary = db.end_session(session.session_id, 0.7);
        std::cout << "  session " << summary.session_id << " ended: " << summary.memory_count << " new memories\n";

        // Episode 2: what worked before, gently?
        const auto q = robotmem::RecallOptions()
                           .filter_eq("task.success", true)
                           .filter("params.force.value", robotmem::Op::Lt, 15.0);
        const robotmem::RecallResult recalled = db.recall("grasp red mug", q);
        for (const robotmem::Hit& h : recalled.hits)
            std::cout << "  recalled " << h.score << "  #" << h.memory.id << " " << h.memory.content << "\n";
        db.close();

        if (recalled.hits.size() != 1 || recalled.hits[0].memory.content != kEpisode[0].insight) {
            std::cerr << "robotmem_episode: expected exactly \"" << kEpisode[0].insight << "\", got "
                      << recalled.hits.size() << " hits\n";
            return 1;
        }
        return 0;
    } catch (const robotmem::Error& e) {
        std::cerr << "robotmem_episode: " << e.what() << "\n";
        return 1;
    }
}
