// robotmem_recall_bench: the Recall service round trip from a C++ client
// (this process -> robotmem_node in another process, over DDS) next to the
// direct C call (rm_recall in this process), on the same database file and the
// same queries, interleaved one by one.
//
//   robotmem_recall_bench --memories FILE --queries FILE --db PATH
//                         [--count N] [--rounds R] [--model-dir DIR] [--node-exe PATH]
//
// FILE: one text per line (scripts/ros2-interfaces.sh --bench writes SQuAD dev
// sentences and questions from ../shared/data). The database is made anew with
// the first N memories (learn_batch; embedded when --model-dir is given). Then,
// for BM25 (node and handle opened with embeddings off) and, with a model, for
// hybrid: robotmem_node is started on the file (its own namespace), each query
// is recalled (n = 5) directly and through the service, and p50 / p95 / p99 of
// both are printed with the node's peak RSS. The DDS environment (domain,
// loopback-only profile) is the caller's. Timings are printed, never asserted.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ament_index_cpp/get_package_prefix.hpp>
#include <rclcpp/rclcpp.hpp>
#include <robotmem.h>
#include <robotmem/robotmem.hpp>

#include "robotmem_msgs/msg/status_code.hpp"
#include "robotmem_msgs/srv/recall.hpp"

extern char ** environ;

namespace
{

using Clock = std::chrono::steady_clock;
using Recall = robotmem_msgs::srv::Recall;

std::vector<std::string> read_lines(const std::string & path, std::size_t limit)
{
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  std::vector<std::string> out;
  for (std::string line; out.size() < limit && std::getline(in, line); ) {
    if (!line.empty()) {
      out.push_back(line);
    }
  }
  return out;
}

double pct(std::vector<double> v, double p)
{
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

long peak_rss_kib(pid_t pid)
{
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line); ) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::strtol(line.c_str() + 6, nullptr, 10);
    }
  }
  return -1;
}

/// robotmem_node on the file, in /rm_bench, as a child process.
pid_t start_node(const std::string & exe, const std::string & db, bool embeddings, const std::string & model_dir)
{
  std::vector<std::string> args = {
    exe, "--ros-args", "-r", "__ns:=/rm_bench", "-p", "db_path:=" + db,
    "-p", std::string("embeddings:=") + (embeddings ? "true" : "false"), "-p", "durability:=normal",
    "--log-level", "warn"};
  if (embeddings) {
    args.push_back("-p");
    args.push_back("model_dir:=" + model_dir);
  }
  std::vector<char *> argv;
  for (auto & a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + exe);
  }
  return pid;
}

struct Phase
{
  std::string name;
  std::vector<double> direct_ms, service_ms;
  long node_rss_kib = -1;
  std::size_t top_mismatch = 0;
};

Phase measure(
  const std::string & name, const rclcpp::Node::SharedPtr & node, const std::string & exe, const std::string & db,
  const std::string & model_dir, const std::vector<std::string> & queries, int rounds)
{
  const bool hybrid = !model_dir.empty();
  Phase ph;
  ph.name = name;
  const pid_t pid = start_node(exe, db, hybrid, model_dir);

  rm_open_options oo;
  rm_open_options_init(&oo);
  oo.path = db.c_str();
  oo.embeddings = hybrid;
  oo.model_dir = hybrid ? model_dir.c_str() : nullptr;
  rm_db * handle = nullptr;
  if (rm_open(&oo, &handle) != RM_OK) {
    throw std::runtime_error("rm_open failed");
  }
  rm_recall_options ro;
  rm_recall_options_init(&ro);
  ro.n = 5;

  auto client = node->create_client<Recall>("/rm_bench/robotmem/recall");
  rclcpp::executors::SingleThreadedExecutor exec;
  exec.add_node(node);
  if (!client->wait_for_service(std::chrono::seconds(60))) {
    throw std::runtime_error("no /rm_bench/robotmem/recall");
  }
  auto call = [&](const std::string & q, std::chrono::milliseconds wait) -> Recall::Response::SharedPtr {
      auto rq = std::make_shared<Recall::Request>();
      rq->query = q;
      rq->n = 5;
      auto f = client->async_send_request(rq);
      if (exec.spin_until_future_complete(f, wait) != rclcpp::FutureReturnCode::SUCCESS) {
        client->remove_pending_request(f);
        return nullptr;
      }
      return f.get();
    };
  // Until the node has matched this client's response reader, responses are lost.
  for (int i = 0; !call("warm up", std::chrono::milliseconds(1000)); ++i) {
    if (i > 30) {
      throw std::runtime_error("the node never answered");
    }
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(50, queries.size()); ++i) {
    call(queries[i], std::chrono::milliseconds(5000));
  }

  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const std::string & q = queries[i];
      std::int64_t direct_top = -1, service_top = -1;
      auto direct = [&]() {
          rm_recall_result * out = nullptr;
          const auto t0 = Clock::now();
          const rm_status st = rm_recall(handle, q.c_str(), &ro, &out);
          ph.direct_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          if (st == RM_OK && out->count > 0) {
            direct_top = out->hits[0].memory.id;
          }
          rm_recall_result_free(out);
        };
      auto service = [&]() {
          const auto t0 = Clock::now();
          auto resp = call(q, std::chrono::milliseconds(10000));
          ph.service_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          if (!resp) {
            throw std::runtime_error("a recall got no response");
          }
          if (resp->status == robotmem_msgs::msg::StatusCode::OK && !resp->memories.empty()) {
            service_top = resp->memories[0].id;
          }
        };
      if ((i + static_cast<std::size_t>(r)) % 2) {
        direct();
        service();
      } else {
        service();
        direct();
      }
      ph.top_mismatch += direct_top != service_top;
    }
  }
  ph.node_rss_kib = peak_rss_kib(pid);
  rm_close(handle);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  return ph;
}

}  // namespace

int main(int argc, char ** argv)
{
  std::map<std::string, std::string> a;
  for (int i = 1; i + 1 < argc; i += 2) {
    a[argv[i]] = argv[i + 1];
  }
  if (!a.count("--memories") || !a.count("--queries") || !a.count("--db")) {
    std::fprintf(
      stderr, "usage: %s --memories FILE --queries FILE --db PATH [--count N] [--rounds R] "
      "[--model-dir DIR] [--node-exe PATH]\n", argv[0]);
    return 2;
  }
  try {
    const std::size_t count = a.count("--count") ? std::stoul(a["--count"]) : 10000;
    const int rounds = a.count("--rounds") ? std::stoi(a["--rounds"]) : 1;
    const std::string db = a["--db"];
    const std::string model_dir = a.count("--model-dir") ? a["--model-dir"] : "";
    const std::string exe = a.count("--node-exe") ? a["--node-exe"] :
      ament_index_cpp::get_package_prefix("robotmem_ros") + "/lib/robotmem_ros/robotmem_node";
    const auto memories = read_lines(a["--memories"], count);
    const auto queries = read_lines(a["--queries"], 1000);

    std::remove(db.c_str());
    {
      auto oo = robotmem::OpenOptions::file(db);
      oo.embeddings = !model_dir.empty();
      if (!model_dir.empty()) {
        oo.model_dir = model_dir;
      }
      oo.durability = robotmem::Durability::Normal;
      const auto t0 = Clock::now();
      auto fill = robotmem::Db::open(oo);
      for (std::size_t i = 0; i < memories.size(); i += 1000) {
        std::vector<robotmem::LearnItem> items(
          memories.begin() + static_cast<long>(i),
          memories.begin() + static_cast<long>(std::min(memories.size(), i + 1000)));
        fill.learn_batch(items);
      }
      std::printf(
        "filled %s: %zu memories (SQuAD dev sentences)%s in %.1f s\n", db.c_str(), memories.size(),
        model_dir.empty() ? "" : ", embedded", std::chrono::duration<double>(Clock::now() - t0).count());
    }

    rclcpp::init(argc, argv);
    auto node = std::make_shared<rclcpp::Node>("robotmem_recall_bench");
    std::vector<Phase> phases;
    phases.push_back(measure("bm25", node, exe, db, "", queries, rounds));
    if (!model_dir.empty()) {
      phases.push_back(measure("hybrid", node, exe, db, model_dir, queries, rounds));
    }
    rclcpp::shutdown();

    std::printf(
      "\n%zu memories, %zu queries x %d round(s), n = 5, interleaved; ms\n", memories.size(), queries.size(),
      rounds);
    std::printf(
      "%-7s %10s %10s %10s %12s %12s %12s %12s %14s %9s\n", "mode", "C p50", "C p95", "C p99", "service p50",
      "service p95", "service p99", "+ p50", "node peak RSS", "top diff");
    for (const auto & ph : phases) {
      std::printf(
        "%-7s %10.3f %10.3f %10.3f %12.3f %12.3f %12.3f %12.3f %10.1f MiB %9zu\n", ph.name.c_str(),
        pct(ph.direct_ms, 0.50), pct(ph.direct_ms, 0.95), pct(ph.direct_ms, 0.99), pct(ph.service_ms, 0.50),
        pct(ph.service_ms, 0.95), pct(ph.service_ms, 0.99), pct(ph.service_ms, 0.50) - pct(ph.direct_ms, 0.50),
        static_cast<double>(ph.node_rss_kib) / 1024.0, ph.top_mismatch);
    }
  } catch (const std::exception & e) {
    std::fprintf(stderr, "robotmem_recall_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
