// The generated C++ types of robotmem_msgs, compiled and used: every service's
// request and response and every message is constructed, filled and copied; the
// constants equal the C API's values; the field lists (read back through the
// generated introspection typesupport) are exactly the documented ones; and the
// C++ typesupport handles resolve.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <rosidl_typesupport_cpp/message_type_support.hpp>
#include <rosidl_typesupport_cpp/service_type_support.hpp>
#include <rosidl_typesupport_introspection_cpp/identifier.hpp>
#include <rosidl_typesupport_introspection_cpp/message_introspection.hpp>
#include <rosidl_typesupport_introspection_cpp/message_type_support_decl.hpp>

#include "robotmem_msgs/msg/memory.hpp"
#include "robotmem_msgs/msg/node_status.hpp"
#include "robotmem_msgs/msg/perception_data.hpp"
#include "robotmem_msgs/msg/status_code.hpp"
#include "robotmem_msgs/srv/end_session.hpp"
#include "robotmem_msgs/srv/forget.hpp"
#include "robotmem_msgs/srv/learn.hpp"
#include "robotmem_msgs/srv/recall.hpp"
#include "robotmem_msgs/srv/save_perception.hpp"
#include "robotmem_msgs/srv/start_session.hpp"
#include "robotmem_msgs/srv/update.hpp"

using namespace robotmem_msgs;

namespace {

// Field names of a generated message, in order, from its introspection typesupport.
template <class T>
std::vector<std::string> fields() {
  const rosidl_message_type_support_t* ts =
      rosidl_typesupport_introspection_cpp::get_message_type_support_handle<T>();
  const auto* members = static_cast<const rosidl_typesupport_introspection_cpp::MessageMembers*>(ts->data);
  std::vector<std::string> out;
  for (uint32_t i = 0; i < members->member_count_; ++i) out.emplace_back(members->members_[i].name_);
  return out;
}

template <class T>
std::string type_name() {
  return rosidl_generator_traits::name<T>();
}

using V = std::vector<std::string>;

}  // namespace

TEST(RobotmemMsgs, StatusCodesEqualRmStatus) {
  EXPECT_EQ(msg::StatusCode::OK, 0);
  EXPECT_EQ(msg::StatusCode::INVALID_ARGUMENT, 1);
  EXPECT_EQ(msg::StatusCode::NOT_FOUND, 2);
  EXPECT_EQ(msg::StatusCode::DUPLICATE, 3);
  EXPECT_EQ(msg::StatusCode::BUSY, 4);
  EXPECT_EQ(msg::StatusCode::IO, 5);
  EXPECT_EQ(msg::StatusCode::CORRUPT, 6);
  EXPECT_EQ(msg::StatusCode::EMBEDDING_UNAVAILABLE, 7);
  EXPECT_EQ(msg::StatusCode::FULL, 8);
  EXPECT_EQ(msg::StatusCode::INVALID_STATE, 9);
  EXPECT_EQ(msg::StatusCode::SCHEMA_TOO_NEW, 10);
  EXPECT_EQ(msg::StatusCode::CLOSED, 11);
  EXPECT_EQ(msg::StatusCode::READ_ONLY, 12);
  EXPECT_EQ(msg::StatusCode::INTERNAL, 13);
  EXPECT_EQ(msg::StatusCode::PANIC, 14);
  EXPECT_EQ(fields<msg::StatusCode>(), V{"value"});
}

TEST(RobotmemMsgs, EnumConstants) {
  EXPECT_EQ(msg::Memory::TYPE_FACT, 0);
  EXPECT_EQ(msg::Memory::TYPE_PERCEPTION, 1);
  EXPECT_EQ(msg::Memory::STATUS_ACTIVE, 0);
  EXPECT_EQ(msg::Memory::STATUS_SUPERSEDED, 1);
  EXPECT_EQ(msg::Memory::STATUS_INVALIDATED, 2);
  EXPECT_EQ(msg::PerceptionData::TYPE_NONE, 0);
  EXPECT_EQ(msg::PerceptionData::TYPE_VISUAL, 1);
  EXPECT_EQ(msg::PerceptionData::TYPE_TACTILE, 2);
  EXPECT_EQ(msg::PerceptionData::TYPE_AUDITORY, 3);
  EXPECT_EQ(msg::PerceptionData::TYPE_PROPRIOCEPTIVE, 4);
  EXPECT_EQ(msg::PerceptionData::TYPE_PROCEDURAL, 5);
  EXPECT_EQ(msg::NodeStatus::EMBED_READY, 0);
  EXPECT_EQ(msg::NodeStatus::EMBED_UNAVAILABLE, 1);
  EXPECT_EQ(msg::NodeStatus::EMBED_MODEL_MISMATCH, 2);
  EXPECT_EQ(srv::Learn::Response::DUP_NONE, 0);
  EXPECT_EQ(srv::Learn::Response::DUP_EXACT, 1);
  EXPECT_EQ(srv::Learn::Response::DUP_JACCARD, 2);
  EXPECT_EQ(srv::Learn::Response::DUP_COSINE, 3);
  EXPECT_EQ(srv::Recall::Response::MODE_HYBRID, 0);
  EXPECT_EQ(srv::Recall::Response::MODE_BM25_ONLY, 1);
  EXPECT_EQ(srv::Recall::Response::MODE_VEC_ONLY, 2);
  EXPECT_EQ(srv::Recall::Response::MODE_SCAN, 3);
}

TEST(RobotmemMsgs, FieldLists) {
  EXPECT_EQ(fields<msg::Memory>(),
            (V{"id", "collection", "session_id", "memory_type", "content", "human_summary", "category",
               "confidence", "status", "superseded_by", "context", "params_json", "spatial_json", "robot_json",
               "task_json", "perception_type", "perception_data", "perception_metadata", "access_count",
               "created_at", "updated_at", "last_accessed", "score", "has_distance", "distance", "matched"}));
  EXPECT_EQ(fields<msg::PerceptionData>(),
            (V{"stamp", "source_id", "seq", "description", "perception_type", "data", "metadata", "context",
               "collection", "session_id", "tags"}));
  EXPECT_EQ(fields<msg::NodeStatus>(),
            (V{"stamp", "ready", "status", "error", "db_path", "collection", "embedding_state", "embedding_model",
               "embedding_reason", "embedding_pending", "learned", "recalls", "perceptions_saved",
               "perception_received", "perception_written", "perception_failed", "perception_dropped",
               "perception_lost", "perception_queued"}));
  EXPECT_EQ(fields<srv::Learn::Request>(), (V{"insight", "context", "collection", "session_id", "tags"}));
  EXPECT_EQ(fields<srv::Learn::Response>(),
            (V{"status", "error", "memory_id", "duplicate", "dup_method", "similarity", "category", "confidence",
               "tags", "scope_files", "has_embedding"}));
  EXPECT_EQ(fields<srv::Recall::Request>(),
            (V{"query", "collection", "n", "has_min_confidence", "min_confidence", "session_id", "context_filter",
               "spatial_sort"}));
  EXPECT_EQ(fields<srv::Recall::Response>(), (V{"status", "error", "memories", "mode", "query_vector", "query_ms"}));
  EXPECT_EQ(fields<srv::SavePerception::Request>(), V{"perception"});
  EXPECT_EQ(fields<srv::SavePerception::Response>(),
            (V{"status", "error", "memory_id", "duplicate", "dup_method", "perception_type", "collection",
               "has_embedding"}));
  EXPECT_EQ(fields<srv::Forget::Request>(), (V{"memory_id", "reason"}));
  EXPECT_EQ(fields<srv::Forget::Response>(), (V{"status", "error", "memory_id", "content", "reason"}));
  EXPECT_EQ(fields<srv::Update::Request>(), (V{"memory_id", "new_content", "has_context", "context"}));
  EXPECT_EQ(fields<srv::Update::Response>(),
            (V{"status", "error", "memory_id", "old_content", "new_content", "category", "confidence", "tags"}));
  EXPECT_EQ(fields<srv::StartSession::Request>(), (V{"collection", "context"}));
  EXPECT_EQ(fields<srv::StartSession::Response>(),
            (V{"status", "error", "session_id", "collection", "active_memories_count"}));
  EXPECT_EQ(fields<srv::EndSession::Request>(), (V{"session_id", "has_outcome_score", "outcome_score"}));
  EXPECT_EQ(fields<srv::EndSession::Response>(),
            (V{"status", "error", "session_id", "collection", "has_outcome_score", "outcome_score", "memory_count",
               "by_type_names", "by_type_counts", "by_category_names", "by_category_counts", "decayed_count",
               "merged_groups", "superseded_count", "compression_ratio", "avg_similarity", "related"}));
}

TEST(RobotmemMsgs, DefaultsAreZero) {
  srv::Recall::Request rq;
  EXPECT_EQ(rq.n, 0);
  EXPECT_FALSE(rq.has_min_confidence);
  EXPECT_TRUE(rq.context_filter.empty());
  srv::EndSession::Request eq;
  EXPECT_FALSE(eq.has_outcome_score);
  EXPECT_EQ(eq.outcome_score, 0.0);
  srv::Learn::Response lr;
  EXPECT_EQ(lr.status, msg::StatusCode::OK);
  EXPECT_TRUE(lr.error.empty());
  msg::Memory m;
  EXPECT_FALSE(m.has_distance);
  EXPECT_TRUE(m.perception_data.empty());
}

TEST(RobotmemMsgs, FillCopyCompare) {
  srv::Learn::Request l;
  l.insight = "grasp of red mug succeeded at 12.5N";
  l.context = R"({"params": {"force": {"value": 12.5}}, "task": {"success": true}})";
  l.tags = {"kitchen", "Robot Arm"};
  srv::Learn::Request l2 = l;
  EXPECT_EQ(l, l2);
  l2.tags.pop_back();
  EXPECT_NE(l, l2);

  srv::Recall::Request r;
  r.query = "grasp mug";
  r.n = 10;
  r.has_min_confidence = true;
  r.min_confidence = 0.0;  // 0 is a valid value: has_min_confidence says it is set
  r.context_filter = R"({"task.success": true})";
  r.spatial_sort = R"({"field": "spatial.object_position", "target": [0.1, 0.2, 0.3]})";
  EXPECT_EQ(srv::Recall::Request(r), r);

  srv::Recall::Response rr;
  msg::Memory hit;
  hit.id = 7;
  hit.memory_type = msg::Memory::TYPE_PERCEPTION;
  hit.perception_type = msg::PerceptionData::TYPE_TACTILE;
  hit.perception_data = {0, 1, 2, 0, 255};  // binary, NUL bytes included
  hit.has_distance = true;
  hit.distance = std::numeric_limits<double>::infinity();
  rr.memories.push_back(hit);
  rr.mode = srv::Recall::Response::MODE_BM25_ONLY;
  rr.query_ms = 0.25;
  srv::Recall::Response rr2 = rr;
  ASSERT_EQ(rr2.memories.size(), 1u);
  EXPECT_EQ(rr2.memories[0].perception_data.size(), 5u);
  EXPECT_EQ(rr2.memories[0].perception_data[4], 255);
  EXPECT_TRUE(std::isinf(rr2.memories[0].distance));

  srv::SavePerception::Request p;
  p.perception.description = "tactile grip force profile";
  p.perception.perception_type = msg::PerceptionData::TYPE_TACTILE;
  p.perception.data = {1, 2, 3};
  p.perception.seq = 42;
  p.perception.stamp.sec = 1;
  p.perception.stamp.nanosec = 2;
  EXPECT_EQ(srv::SavePerception::Request(p).perception.seq, 42u);

  srv::EndSession::Response e;
  e.by_type_names = {"fact"};
  e.by_type_counts = {3};
  e.related.resize(2);
  e.has_outcome_score = true;
  e.outcome_score = 0.0;
  EXPECT_EQ(srv::EndSession::Response(e).related.size(), 2u);

  srv::Forget::Request f;
  f.memory_id = 3;
  f.reason = "wrong";
  srv::Update::Request u;
  u.memory_id = 3;
  u.has_context = true;
  srv::StartSession::Request s;
  s.collection = "robot_a";
  EXPECT_EQ(srv::Forget::Request(f).reason, "wrong");
  EXPECT_EQ(srv::Update::Request(u), u);
  EXPECT_TRUE(srv::Update::Request(u).has_context);
  EXPECT_EQ(srv::StartSession::Request(s).collection, "robot_a");
  msg::NodeStatus ns;
  ns.ready = true;
  ns.perception_lost = 2;
  EXPECT_EQ(msg::NodeStatus(ns), ns);
}

TEST(RobotmemMsgs, TypeNamesAndTypesupport) {
  EXPECT_EQ(type_name<srv::Learn>(), "robotmem_msgs/srv/Learn");
  EXPECT_EQ(type_name<srv::Recall>(), "robotmem_msgs/srv/Recall");
  EXPECT_EQ(type_name<srv::SavePerception>(), "robotmem_msgs/srv/SavePerception");
  EXPECT_EQ(type_name<srv::Forget>(), "robotmem_msgs/srv/Forget");
  EXPECT_EQ(type_name<srv::Update>(), "robotmem_msgs/srv/Update");
  EXPECT_EQ(type_name<srv::StartSession>(), "robotmem_msgs/srv/StartSession");
  EXPECT_EQ(type_name<srv::EndSession>(), "robotmem_msgs/srv/EndSession");
  EXPECT_EQ(type_name<msg::Memory>(), "robotmem_msgs/msg/Memory");
  EXPECT_EQ(type_name<msg::PerceptionData>(), "robotmem_msgs/msg/PerceptionData");
  EXPECT_EQ(type_name<msg::NodeStatus>(), "robotmem_msgs/msg/NodeStatus");
  EXPECT_TRUE(rosidl_generator_traits::is_service<srv::Learn>::value);
  EXPECT_TRUE(rosidl_generator_traits::is_message<msg::PerceptionData>::value);
  // What rclcpp::Node::create_service / create_subscription resolve at run time.
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::Learn>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::Recall>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::SavePerception>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::Forget>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::Update>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::StartSession>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_service_type_support_handle<srv::EndSession>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_message_type_support_handle<msg::PerceptionData>(), nullptr);
  EXPECT_NE(rosidl_typesupport_cpp::get_message_type_support_handle<msg::NodeStatus>(), nullptr);
  // YAML rendering from the generated traits (what `ros2 topic echo` prints).
  msg::StatusCode sc;
  sc.value = msg::StatusCode::NOT_FOUND;
  EXPECT_EQ(to_yaml(sc), "value: 2\n");
}
