// robotmem_ros_logic against a real robotmem::Db (an in-memory database and a
// file), through the generated robotmem_msgs C++ types: parameters, the seven
// service mappings (success and error paths), Memory conversion, NodeStatus
// embedding fields, and the perception batcher (batching, interval, bounded
// queue, sequence-gap loss counting, batched writes).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <robotmem/robotmem.hpp>

#include "robotmem_ros/params.hpp"
#include "robotmem_ros/perception_batcher.hpp"
#include "robotmem_ros/service_logic.hpp"

using namespace robotmem_ros;
using robotmem_msgs::msg::StatusCode;
using std::chrono::milliseconds;

namespace
{

robotmem::Db open_memory()
{
  NodeParams p;
  p.db_path = ":memory:";
  p.collection = "robot_a";
  p.embeddings = false;
  return robotmem::Db::open(open_options(p));
}

srv::Learn::Response learn(const robotmem::Db & db, const std::string & insight, const std::string & context = "",
                           const std::string & session = "")
{
  srv::Learn::Request rq;
  rq.insight = insight;
  rq.context = context;
  rq.session_id = session;
  srv::Learn::Response rs;
  handle_learn(db, rq, rs);
  return rs;
}

msg::PerceptionData perception(const std::string & source, std::uint64_t seq, const std::string & desc)
{
  msg::PerceptionData m;
  m.source_id = source;
  m.seq = seq;
  m.description = desc;
  m.perception_type = msg::PerceptionData::TYPE_TACTILE;
  m.data = {0, 1, 2, 3};
  return m;
}

}  // namespace

// --- parameters ---------------------------------------------------------------------

TEST(Params, DefaultsAreValid)
{
  NodeParams p;
  EXPECT_TRUE(validate(p).empty()) << validation_message(p);
  EXPECT_EQ(validation_message(p), "");
  EXPECT_FALSE(best_effort(p));
}

TEST(Params, EachInvalidValueIsNamed)
{
  NodeParams p;
  p.collection = "  ";
  p.durability = "fast";
  p.perception_topic = "";
  p.perception_qos_depth = 0;
  p.perception_qos_reliability = "sometimes";
  p.batch_size = 0;
  p.flush_interval_ms = -5;
  p.max_queue = 0;
  p.status_period_ms = 10;
  const auto e = validate(p);
  ASSERT_EQ(e.size(), 9u) << validation_message(p);
  const std::string all = validation_message(p);
  for (const char * name : {"collection:", "durability:", "perception_topic:", "perception_qos_depth:",
      "perception_qos_reliability:", "batch_size: must be 1-10000, got 0", "flush_interval_ms:", "max_queue:",
      "status_period_ms:"})
  {
    EXPECT_NE(all.find(name), std::string::npos) << name << " not in " << all;
  }
  p = NodeParams();
  p.batch_size = 100;
  p.max_queue = 50;  // smaller than a batch
  EXPECT_EQ(validate(p).size(), 1u);
  p = NodeParams();
  p.batch_size = RM_MAX_BATCH + 1;
  EXPECT_EQ(validate(p).size(), 2u);  // batch_size, and max_queue below it
}

TEST(Params, OpenOptions)
{
  NodeParams p;
  auto o = open_options(p);
  EXPECT_FALSE(o.path.has_value());  // library default path
  EXPECT_FALSE(o.model_dir.has_value());
  EXPECT_FALSE(o.ort_library.has_value());
  EXPECT_EQ(o.default_collection.value_or(""), "default");
  EXPECT_EQ(o.durability.value_or(robotmem::Durability::Normal), robotmem::Durability::Full);
  p.db_path = "/tmp/x.db";
  p.model_dir = "/opt/model";
  p.ort_library = "/opt/libonnxruntime.so";
  p.embeddings = false;
  p.durability = "normal";
  p.perception_qos_reliability = "best_effort";
  o = open_options(p);
  EXPECT_EQ(o.path.value_or(""), "/tmp/x.db");
  EXPECT_EQ(o.model_dir.value_or(""), "/opt/model");
  EXPECT_EQ(o.ort_library.value_or(""), "/opt/libonnxruntime.so");
  EXPECT_EQ(o.embeddings.value_or(true), false);
  EXPECT_EQ(o.durability.value_or(robotmem::Durability::Full), robotmem::Durability::Normal);
  EXPECT_TRUE(best_effort(p));
}

TEST(Params, NodeClock)
{
  // A simulated clock in nanoseconds, as rclcpp::Clock::now().nanoseconds() gives it.
  auto ns = std::make_shared<std::int64_t>(1935630121000123456);  // 2031-05-04T03:02:01.000123456Z
  const auto ms = clock_ms([ns] {return *ns;});
  EXPECT_EQ(ms(), 1935630121000);
  *ns = 0;  // no /clock message yet
  EXPECT_EQ(ms(), -1);  // not a time: the library reads the system clock
  *ns = 1935630121000123456;
  NodeParams p;
  p.db_path = ":memory:";
  p.embeddings = false;
  auto o = open_options(p);
  o.clock = ms;
  const auto db = robotmem::Db::open(o);
  robotmem::LearnOptions lo;
  lo.ttl_seconds = 60.0;
  const auto id = db.learn("the simulated forklift blocks aisle 2", lo).memory_id;
  EXPECT_EQ(db.get_memory(id).memory.created_at, "2031-05-04T03:02:01.000Z");
  *ns += 61000000000;  // 61 s of simulated time
  EXPECT_TRUE(db.get_memory(id).memory.expired);
}

// --- services -----------------------------------------------------------------------

TEST(Services, LearnRecallRoundTrip)
{
  const auto db = open_memory();
  auto l = learn(db, "grasp of red mug succeeded at 12.5N",
      R"({"params": {"force": {"value": 12.5}}, "task": {"success": true},
          "spatial": {"object_position": [0.1, 0.2, 0.3]}})");
  ASSERT_EQ(l.status, StatusCode::OK) << l.error;
  EXPECT_GT(l.memory_id, 0);
  EXPECT_FALSE(l.duplicate);
  EXPECT_EQ(l.dup_method, srv::Learn::Response::DUP_NONE);
  EXPECT_FALSE(l.category.empty());
  EXPECT_GE(l.confidence, 0.8);
  EXPECT_FALSE(l.has_embedding);
  auto f = learn(db, "grasp of blue mug failed at 30N, it slipped",
      R"({"params": {"force": {"value": 30}}, "task": {"success": false},
          "spatial": {"object_position": [1.0, 1.0, 0.3]}})");
  ASSERT_EQ(f.status, StatusCode::OK) << f.error;

  // The same insight again: a duplicate naming the first memory.
  auto d = learn(db, "grasp of red mug succeeded at 12.5N");
  ASSERT_EQ(d.status, StatusCode::OK) << d.error;
  EXPECT_TRUE(d.duplicate);
  EXPECT_EQ(d.memory_id, l.memory_id);
  EXPECT_EQ(d.dup_method, srv::Learn::Response::DUP_EXACT);
  EXPECT_DOUBLE_EQ(d.similarity, 1.0);

  srv::Recall::Request rq;
  rq.query = "grasp mug";
  rq.context_filter = R"({"task.success": true})";
  srv::Recall::Response rs;
  handle_recall(db, rq, rs);
  ASSERT_EQ(rs.status, StatusCode::OK) << rs.error;
  ASSERT_EQ(rs.memories.size(), 1u);
  const msg::Memory & m = rs.memories[0];
  EXPECT_EQ(m.id, l.memory_id);
  EXPECT_EQ(m.collection, "robot_a");
  EXPECT_EQ(m.memory_type, msg::Memory::TYPE_FACT);
  EXPECT_EQ(m.status, msg::Memory::STATUS_ACTIVE);
  EXPECT_EQ(m.content, "grasp of red mug succeeded at 12.5N");
  EXPECT_NE(m.context.find("\"force\""), std::string::npos);
  EXPECT_NE(m.params_json.find("12.5"), std::string::npos);
  EXPECT_NE(m.task_json.find("true"), std::string::npos);
  EXPECT_EQ(m.robot_json, "");
  EXPECT_EQ(m.session_id, "");
  EXPECT_EQ(m.perception_type, msg::PerceptionData::TYPE_NONE);
  EXPECT_TRUE(m.perception_data.empty());
  EXPECT_DOUBLE_EQ(m.score, 1.0);
  EXPECT_FALSE(m.has_distance);
  EXPECT_TRUE(m.matched);
  EXPECT_FALSE(m.created_at.empty());
  EXPECT_EQ(rs.mode, srv::Recall::Response::MODE_BM25_ONLY);
  EXPECT_EQ(rs.query_vector, srv::Recall::Response::QUERY_VECTOR_NONE);
  EXPECT_GE(rs.query_ms, 0.0);

  // Spatial sort: nearest first, distances set.
  rq = srv::Recall::Request();
  rq.query = "grasp mug";
  rq.n = 10;
  rq.spatial_sort = R"({"field": "spatial.object_position", "target": [1.0, 1.0, 0.3]})";
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  ASSERT_EQ(rs.status, StatusCode::OK) << rs.error;
  ASSERT_EQ(rs.memories.size(), 2u);
  EXPECT_EQ(rs.memories[0].id, f.memory_id);
  EXPECT_TRUE(rs.memories[0].has_distance);
  EXPECT_NEAR(rs.memories[0].distance, 0.0, 1e-9);
  EXPECT_TRUE(rs.memories[1].has_distance);
  EXPECT_GT(rs.memories[1].distance, 1.0);

  // has_min_confidence with 0 (a valid value) vs. a threshold above every memory.
  rq = srv::Recall::Request();
  rq.query = "grasp mug";
  rq.has_min_confidence = true;
  rq.min_confidence = 0.0;
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  EXPECT_EQ(rs.memories.size(), 2u);
  rq.min_confidence = 0.99;
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  ASSERT_EQ(rs.status, StatusCode::OK) << rs.error;
  EXPECT_EQ(rs.memories.size(), 0u);
  // n = 1 limits.
  rq = srv::Recall::Request();
  rq.query = "grasp mug";
  rq.n = 1;
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  EXPECT_EQ(rs.memories.size(), 1u);
}

TEST(Services, Errors)
{
  const auto db = open_memory();
  auto l = learn(db, "   ");
  EXPECT_EQ(l.status, StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(l.error.empty());
  EXPECT_EQ(l.memory_id, 0);

  l = learn(db, "valid insight about the dock", "{\"unterminated\": ");
  EXPECT_EQ(l.status, StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(l.error.find("context"), std::string::npos) << l.error;

  srv::Recall::Request rq;
  rq.query = "dock";
  rq.context_filter = "[1, 2]";
  srv::Recall::Response rs;
  handle_recall(db, rq, rs);
  EXPECT_EQ(rs.status, StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(rs.memories.empty());

  rq.context_filter.clear();
  rq.n = -1;
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  EXPECT_EQ(rs.status, StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(rs.error.find("n:"), std::string::npos);

  rq.n = 0;
  rq.has_min_confidence = true;
  rq.min_confidence = 2.0;
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  EXPECT_EQ(rs.status, StatusCode::INVALID_ARGUMENT);

  srv::Forget::Request fq;
  fq.memory_id = 12345;
  fq.reason = "gone";
  srv::Forget::Response fs;
  handle_forget(db, fq, fs);
  EXPECT_EQ(fs.status, StatusCode::NOT_FOUND);

  srv::EndSession::Request eq;
  eq.session_id = "00000000-0000-0000-0000-000000000000";
  srv::EndSession::Response es;
  handle_end_session(db, eq, es);
  EXPECT_EQ(es.status, StatusCode::NOT_FOUND);

  // A closed (empty) Db: every handler answers CLOSED.
  const robotmem::Db closed;
  l = learn(closed, "anything at all here");
  EXPECT_EQ(l.status, StatusCode::CLOSED);
  {
    srv::Recall::Response r;
    handle_recall(closed, srv::Recall::Request(), r);
    EXPECT_EQ(r.status, StatusCode::CLOSED);
    srv::SavePerception::Request pq1;
    pq1.perception = perception("", 0, "tactile grip force profile during the grasp");
    srv::SavePerception::Response p;
    handle_save_perception(closed, pq1, p);
    EXPECT_EQ(p.status, StatusCode::CLOSED);
    srv::Forget::Request fq1;
    fq1.memory_id = 1;
    srv::Forget::Response f;
    handle_forget(closed, fq1, f);
    EXPECT_EQ(f.status, StatusCode::CLOSED);
    srv::Update::Request uq1;
    uq1.memory_id = 1;
    uq1.new_content = "new text";
    srv::Update::Response u;
    handle_update(closed, uq1, u);
    EXPECT_EQ(u.status, StatusCode::CLOSED);
    srv::StartSession::Response s;
    handle_start_session(closed, srv::StartSession::Request(), s);
    EXPECT_EQ(s.status, StatusCode::CLOSED);
    srv::EndSession::Request eq1;
    eq1.session_id = "00000000-0000-0000-0000-000000000000";
    srv::EndSession::Response e;
    handle_end_session(closed, eq1, e);
    EXPECT_EQ(e.status, StatusCode::CLOSED);
  }
  msg::NodeStatus ns;
  fill_embedding_status(closed, ns);
  EXPECT_EQ(ns.embedding_state, msg::NodeStatus::EMBED_UNAVAILABLE);
  EXPECT_FALSE(ns.embedding_reason.empty());
}

TEST(Services, ForgetUpdate)
{
  const auto db = open_memory();
  auto l = learn(db, "the charger is behind the kitchen door");
  ASSERT_EQ(l.status, StatusCode::OK) << l.error;

  srv::Update::Request uq;
  uq.memory_id = l.memory_id;
  uq.new_content = "the charger is behind the pantry door";
  srv::Update::Response us;
  handle_update(db, uq, us);
  ASSERT_EQ(us.status, StatusCode::OK) << us.error;
  EXPECT_EQ(us.memory_id, l.memory_id);
  EXPECT_EQ(us.old_content, "the charger is behind the kitchen door");
  EXPECT_EQ(us.new_content, "the charger is behind the pantry door");
  EXPECT_FALSE(us.category.empty());

  // has_context replaces the context (kept without it).
  uq.new_content = "the charger is behind the pantry door, left side";
  uq.has_context = true;
  uq.context = R"({"spatial": {"room": "pantry"}})";
  us = srv::Update::Response();
  handle_update(db, uq, us);
  ASSERT_EQ(us.status, StatusCode::OK) << us.error;
  srv::Recall::Request rq;
  rq.query = "charger";
  srv::Recall::Response rs;
  handle_recall(db, rq, rs);
  ASSERT_EQ(rs.memories.size(), 1u);
  EXPECT_NE(rs.memories[0].spatial_json.find("pantry"), std::string::npos);

  srv::Forget::Request fq;
  fq.memory_id = l.memory_id;
  fq.reason = "charger moved";
  srv::Forget::Response fs;
  handle_forget(db, fq, fs);
  ASSERT_EQ(fs.status, StatusCode::OK) << fs.error;
  EXPECT_EQ(fs.memory_id, l.memory_id);
  EXPECT_EQ(fs.content, "the charger is behind the pantry door, left side");
  EXPECT_EQ(fs.reason, "charger moved");
  fs = srv::Forget::Response();
  handle_forget(db, fq, fs);
  EXPECT_EQ(fs.status, StatusCode::INVALID_STATE);
  us = srv::Update::Response();
  handle_update(db, uq, us);
  EXPECT_EQ(us.status, StatusCode::INVALID_STATE);
  rs = srv::Recall::Response();
  handle_recall(db, rq, rs);
  EXPECT_TRUE(rs.memories.empty());
}

TEST(Services, SessionsAndPerception)
{
  const auto db = open_memory();
  srv::StartSession::Request sq;
  sq.context = R"({"robot": {"id": "arm-1"}})";
  srv::StartSession::Response ss;
  handle_start_session(db, sq, ss);
  ASSERT_EQ(ss.status, StatusCode::OK) << ss.error;
  EXPECT_EQ(ss.session_id.size(), 36u);
  EXPECT_EQ(ss.collection, "robot_a");
  EXPECT_EQ(ss.active_memories_count, 0);

  ASSERT_EQ(learn(db, "approach from the left avoids the shelf edge", "", ss.session_id).status, StatusCode::OK);

  srv::SavePerception::Request pq;
  pq.perception = perception("", 0, "tactile grip force profile during the grasp");
  pq.perception.session_id = ss.session_id;
  pq.perception.metadata = R"({"rate_hz": 100})";
  pq.perception.data = {0, 255, 0, 7};  // binary with NUL bytes
  srv::SavePerception::Response ps;
  handle_save_perception(db, pq, ps);
  ASSERT_EQ(ps.status, StatusCode::OK) << ps.error;
  EXPECT_GT(ps.memory_id, 0);
  EXPECT_FALSE(ps.duplicate);
  EXPECT_EQ(ps.perception_type, msg::PerceptionData::TYPE_TACTILE);
  EXPECT_EQ(ps.collection, "robot_a");
  ps = srv::SavePerception::Response();
  handle_save_perception(db, pq, ps);
  ASSERT_EQ(ps.status, StatusCode::OK) << ps.error;
  EXPECT_TRUE(ps.duplicate);

  // The perception comes back byte for byte through Recall.
  srv::Recall::Request rq;
  rq.query = "tactile grip force";
  rq.session_id = ss.session_id;
  srv::Recall::Response rs;
  handle_recall(db, rq, rs);
  ASSERT_EQ(rs.status, StatusCode::OK) << rs.error;
  bool found = false;
  for (const auto & m : rs.memories) {
    if (m.memory_type == msg::Memory::TYPE_PERCEPTION) {
      found = true;
      EXPECT_EQ(m.perception_type, msg::PerceptionData::TYPE_TACTILE);
      EXPECT_EQ(m.perception_data, (std::vector<std::uint8_t>{0, 255, 0, 7}));
      EXPECT_NE(m.perception_metadata.find("rate_hz"), std::string::npos);
      EXPECT_EQ(m.session_id, ss.session_id);
    }
  }
  EXPECT_TRUE(found);

  // Bad perception type and too-short description.
  pq.perception.perception_type = 99;
  ps = srv::SavePerception::Response();
  handle_save_perception(db, pq, ps);
  EXPECT_EQ(ps.status, StatusCode::INVALID_ARGUMENT);
  pq.perception.perception_type = msg::PerceptionData::TYPE_NONE;  // -> library default (visual)
  pq.perception.description = "hi";
  ps = srv::SavePerception::Response();
  handle_save_perception(db, pq, ps);
  EXPECT_EQ(ps.status, StatusCode::INVALID_ARGUMENT);

  // End with outcome 0.0 (a valid score: has_outcome_score says it is set).
  srv::EndSession::Request eq;
  eq.session_id = ss.session_id;
  eq.has_outcome_score = true;
  eq.outcome_score = 0.0;
  srv::EndSession::Response es;
  handle_end_session(db, eq, es);
  ASSERT_EQ(es.status, StatusCode::OK) << es.error;
  EXPECT_EQ(es.session_id, ss.session_id);
  EXPECT_TRUE(es.has_outcome_score);
  EXPECT_EQ(es.outcome_score, 0.0);
  EXPECT_EQ(es.memory_count, 2);
  ASSERT_EQ(es.by_type_names.size(), es.by_type_counts.size());
  ASSERT_EQ(es.by_category_names.size(), es.by_category_counts.size());
  std::int64_t total = 0;
  for (auto c : es.by_type_counts) {
    total += c;
  }
  EXPECT_EQ(total, 2);
  es = srv::EndSession::Response();
  handle_end_session(db, eq, es);
  EXPECT_EQ(es.status, StatusCode::INVALID_STATE);

  // Without an outcome score.
  ss = srv::StartSession::Response();
  handle_start_session(db, srv::StartSession::Request(), ss);
  ASSERT_EQ(ss.status, StatusCode::OK) << ss.error;
  eq = srv::EndSession::Request();
  eq.session_id = ss.session_id;
  es = srv::EndSession::Response();
  handle_end_session(db, eq, es);
  ASSERT_EQ(es.status, StatusCode::OK) << es.error;
  EXPECT_FALSE(es.has_outcome_score);
  EXPECT_EQ(es.memory_count, 0);

  msg::NodeStatus ns;
  fill_embedding_status(db, ns);
  EXPECT_EQ(ns.embedding_state, msg::NodeStatus::EMBED_UNAVAILABLE);  // embeddings = false
  EXPECT_EQ(ns.embedding_model, "");
}

TEST(Services, ConcurrentRecallWhileWriting)
{
  const auto db = open_memory();
  ASSERT_EQ(learn(db, "door code for the lab is on the whiteboard").status, StatusCode::OK);
  int stored = 0;
  std::thread writer([&] {
      for (int i = 0; i < 50; ++i) {
        stored += learn(db, "observation number " + std::to_string(i) + " about shelf " + std::to_string(i * 7))
          .status == StatusCode::OK;
      }
    });
  int ok = 0;
  for (int i = 0; i < 50; ++i) {
    srv::Recall::Request rq;
    rq.query = "door code lab";
    srv::Recall::Response rs;
    handle_recall(db, rq, rs);
    ok += rs.status == StatusCode::OK && !rs.memories.empty();
  }
  writer.join();
  EXPECT_EQ(ok, 50);
  EXPECT_EQ(stored, 50);
}

// --- perception batcher -------------------------------------------------------------

TEST(Batcher, BatchSizeAndInterval)
{
  PerceptionBatcher b(BatcherConfig{3, milliseconds(100), 10});
  const auto t0 = PerceptionBatcher::Clock::now();
  EXPECT_FALSE(b.flush_due(t0));  // empty
  EXPECT_TRUE(b.push(perception("cam", 0, "frame zero seen"), t0));
  EXPECT_FALSE(b.flush_due(t0));
  EXPECT_FALSE(b.flush_due(t0 + milliseconds(99)));
  EXPECT_TRUE(b.flush_due(t0 + milliseconds(100)));  // the oldest waited the interval
  EXPECT_TRUE(b.push(perception("cam", 1, "frame one seen"), t0));
  EXPECT_TRUE(b.push(perception("cam", 2, "frame two seen"), t0));
  EXPECT_TRUE(b.flush_due(t0));  // a full batch
  EXPECT_TRUE(b.push(perception("cam", 3, "frame three seen"), t0));
  auto batch = b.take_batch();
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].seq, 0u);  // oldest first
  EXPECT_EQ(batch[2].seq, 2u);
  EXPECT_EQ(b.stats().queued, 1u);
  batch = b.take_batch();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_TRUE(b.take_batch().empty());
  const auto s = b.stats();
  EXPECT_EQ(s.received, 4u);
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.dropped, 0u);
}

TEST(Batcher, SequenceGapsPerSource)
{
  PerceptionBatcher b(BatcherConfig{100, milliseconds(100), 1000});
  for (std::uint64_t seq : {0, 1, 2, 5, 6, 10}) {  // 3, 4 and 7, 8, 9 never arrive
    b.push(perception("left_cam", seq, "a frame of the left camera"));
  }
  for (std::uint64_t seq : {100, 101, 103}) {  // a source starting at 100; 102 lost
    b.push(perception("gripper", seq, "gripper force sample"));
  }
  auto s = b.stats();
  EXPECT_EQ(s.received, 9u);
  EXPECT_EQ(s.lost, 6u);
  EXPECT_EQ(s.resets, 0u);
  // A restarted publisher (seq back to 0) and a duplicate are resets, not losses.
  b.push(perception("left_cam", 0, "a frame of the left camera"));
  b.push(perception("left_cam", 1, "a frame of the left camera"));
  b.push(perception("left_cam", 1, "a frame of the left camera"));
  s = b.stats();
  EXPECT_EQ(s.lost, 6u);
  EXPECT_EQ(s.resets, 2u);
  EXPECT_EQ(s.queued, 12u);
}

TEST(Batcher, BoundedQueueDrops)
{
  PerceptionBatcher b(BatcherConfig{2, milliseconds(100), 4});
  int accepted = 0;
  for (std::uint64_t i = 0; i < 10; ++i) {
    accepted += b.push(perception("imu", i, "inertial sample window"));
  }
  EXPECT_EQ(accepted, 4);
  auto s = b.stats();
  EXPECT_EQ(s.dropped, 6u);
  EXPECT_EQ(s.lost, 0u);  // dropped is not lost: they arrived
  EXPECT_EQ(s.queued, 4u);
  EXPECT_EQ(b.take_all().size(), 4u);
  EXPECT_TRUE(b.push(perception("imu", 10, "inertial sample window")));
  // max_queue below batch_size is raised to batch_size.
  PerceptionBatcher small(BatcherConfig{8, milliseconds(1), 2});
  EXPECT_EQ(small.config().max_queue, 8u);
}

TEST(Batcher, SourceTableIsBounded)
{
  BatcherConfig c{10, milliseconds(100), 100};
  c.max_sources = 2;
  PerceptionBatcher b(c);
  b.push(perception("a", 0, "sample from source a"));
  b.push(perception("b", 0, "sample from source b"));
  b.push(perception("c", 0, "sample from source c"));  // table full: cleared
  b.push(perception("a", 5, "sample from source a"));  // "a" is new again: no loss counted
  const auto s = b.stats();
  EXPECT_EQ(s.source_resets, 1u);
  EXPECT_EQ(s.lost, 0u);
}

TEST(Batcher, WriteBatchToDb)
{
  const auto db = open_memory();
  PerceptionBatcher b(BatcherConfig{3, milliseconds(50), 100});
  for (std::uint64_t i = 0; i < 5; ++i) {
    b.push(perception("gripper", i, "grip force sample number " + std::to_string(i)));
  }
  b.push(perception("gripper", 5, "bad"));  // too short: rejected by the library
  std::uint64_t written = 0, failed = 0;
  while (true) {
    auto batch = b.take_batch();
    if (batch.empty()) {
      break;
    }
    EXPECT_LE(batch.size(), 3u);
    const WriteOutcome w = write_batch(db, b, batch);
    written += w.written;
    failed += w.failed;
    if (w.failed) {
      EXPECT_EQ(w.first_status, robotmem::Status::InvalidArgument);
      EXPECT_FALSE(w.first_error.empty());
    }
  }
  EXPECT_EQ(written, 5u);
  EXPECT_EQ(failed, 1u);
  const auto s = b.stats();
  EXPECT_EQ(s.written, 5u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.queued, 0u);

  srv::Recall::Request rq;
  rq.query = "grip force sample";
  rq.n = 20;
  srv::Recall::Response rs;
  handle_recall(db, rq, rs);
  ASSERT_EQ(rs.status, StatusCode::OK) << rs.error;
  EXPECT_EQ(rs.memories.size(), 5u);
}

TEST(Batcher, ConcurrentPushAndTake)
{
  PerceptionBatcher b(BatcherConfig{16, milliseconds(1), 100000});
  std::thread producer([&] {
      for (std::uint64_t i = 0; i < 5000; ++i) {
        b.push(perception("lidar", i * 2, "scan"));  // every other number: 4999 lost
      }
    });
  std::size_t taken = 0;
  while (taken < 5000) {
    taken += b.take_batch().size();
    std::this_thread::yield();
  }
  producer.join();
  const auto s = b.stats();
  EXPECT_EQ(s.received, 5000u);
  EXPECT_EQ(s.lost, 4999u);
  EXPECT_EQ(s.queued, 0u);
}

TEST(Batcher, FileDatabaseSurvivesReopen)
{
  char path[] = "/tmp/robotmem_ros_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::remove(path);
  NodeParams p;
  p.db_path = path;
  p.embeddings = false;
  p.durability = "normal";
  {
    const auto db = robotmem::Db::open(open_options(p));
    PerceptionBatcher b(BatcherConfig{});
    b.push(perception("cam", 0, "kitchen table with two mugs"));
    EXPECT_EQ(write_batch(db, b, b.take_batch()).written, 1u);
  }
  {
    const auto db = robotmem::Db::open(open_options(p));
    srv::Recall::Request rq;
    rq.query = "kitchen table mugs";
    srv::Recall::Response rs;
    handle_recall(db, rq, rs);
    ASSERT_EQ(rs.status, StatusCode::OK) << rs.error;
    ASSERT_EQ(rs.memories.size(), 1u);
    EXPECT_EQ(rs.memories[0].collection, "default");
  }
  for (const char * suffix : {"", "-wal", "-shm", "-lock"}) {
    std::remove((std::string(path) + suffix).c_str());
  }
}
