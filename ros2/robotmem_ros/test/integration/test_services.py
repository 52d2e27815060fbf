"""The seven services of the real node, valid and invalid requests, with the node
run as an executable and as a component loaded into component_container_mt
through composition_interfaces/srv/LoadNode; invalid parameters fail the start
or the load with a message naming each of them."""
import json
import os
import uuid

from harness import NodeTest, Process, container_executable, start_node
from rclpy.parameter import Parameter
from composition_interfaces.srv import ListNodes, LoadNode, UnloadNode
from robotmem_msgs.msg import PerceptionData, StatusCode


class ServicesTest(NodeTest):
    def exercise_services(self, memory):
        """Every service with a valid request, then with invalid ones."""
        ctx = json.dumps({"params": {"force": {"value": 12.5, "unit": "N"}}, "task": {"success": True},
                          "spatial": {"object_position": [0.4, -0.1, 0.8]}})
        s = self.ok(memory, "start_session", context=json.dumps({"task": {"name": "grasp"}}))
        self.assertEqual(len(s.session_id), 36)
        l1 = self.ok(memory, "learn", insight="grasp of the red mug succeeded at 12.5N", context=ctx,
                     session_id=s.session_id, tags=["kitchen"])
        self.assertGreater(l1.memory_id, 0)
        self.assertFalse(l1.duplicate)
        self.assertIn("kitchen", list(l1.tags))
        l2 = self.ok(memory, "learn", insight="the charging dock B is blocked by a pallet",
                     context=json.dumps({"task": {"success": False}}))
        dup = self.ok(memory, "learn", insight="grasp of the red mug succeeded at 12.5N", context=ctx)
        self.assertTrue(dup.duplicate)
        self.assertEqual(dup.memory_id, l1.memory_id)

        r = self.ok(memory, "recall", query="red mug grasp", n=5)
        self.assertEqual([m.id for m in r.memories][:1], [l1.memory_id])
        r = self.ok(memory, "recall", query="grasp dock", n=5, context_filter=json.dumps({"task.success": False}))
        self.assertEqual([m.id for m in r.memories], [l2.memory_id])
        r = self.ok(memory, "recall", query="grasp mug", n=5,
                    spatial_sort=json.dumps({"field": "spatial.object_position", "target": [0.4, -0.1, 0.8]}))
        self.assertEqual(r.memories[0].id, l1.memory_id)

        p = self.ok(memory, "save_perception", perception=PerceptionData(
            source_id="wrist_cam", description="force profile of the mug grasp rising to 12.5 N",
            perception_type=PerceptionData.TYPE_TACTILE, data=[1, 2, 3], metadata='{"rate_hz": 100}'))
        self.assertGreater(p.memory_id, 0)
        self.assertEqual(p.perception_type, PerceptionData.TYPE_TACTILE)

        u = self.ok(memory, "update", memory_id=l2.memory_id, new_content="the charging dock B is free again")
        self.assertEqual(u.old_content, "the charging dock B is blocked by a pallet")
        r = self.ok(memory, "recall", query="charging dock free", n=3)
        self.assertIn("free again", r.memories[0].content)

        e = self.ok(memory, "end_session", session_id=s.session_id, has_outcome_score=True, outcome_score=0.0)
        self.assertEqual(e.memory_count, 1)
        self.assertTrue(e.has_outcome_score)
        f = self.ok(memory, "forget", memory_id=l2.memory_id, reason="dock moved")
        self.assertEqual(f.content, "the charging dock B is free again")
        r = self.ok(memory, "recall", query="charging dock", n=5)
        self.assertNotIn(l2.memory_id, [m.id for m in r.memories])

        # Invalid requests: a status and a message naming what is wrong, never a crash.
        def bad(name, status, word, **fields):
            resp = self.ros.call(memory, name, **fields)
            self.assertEqual(resp.status, status, "%s %r: %d %s" % (name, fields, resp.status, resp.error))
            self.assertIn(word, resp.error)
            return resp

        self.assertEqual(bad("learn", StatusCode.INVALID_ARGUMENT, "insight", insight="   ").memory_id, 0)
        bad("learn", StatusCode.INVALID_ARGUMENT, "context", insight="valid insight about the dock",
            context='{"unterminated": ')
        bad("recall", StatusCode.INVALID_ARGUMENT, "n", query="dock", n=-1)
        bad("recall", StatusCode.INVALID_ARGUMENT, "context_filter", query="dock", context_filter="[1, 2]")
        bad("recall", StatusCode.INVALID_ARGUMENT, "spatial_sort", query="dock", spatial_sort='{"field": 3}')
        bad("save_perception", StatusCode.INVALID_ARGUMENT, "perception_type",
            perception=PerceptionData(description="a long enough description", perception_type=99))
        bad("forget", StatusCode.NOT_FOUND, "12345", memory_id=12345, reason="gone")
        bad("update", StatusCode.INVALID_ARGUMENT, "new_content", memory_id=l1.memory_id, new_content="")
        bad("start_session", StatusCode.INVALID_ARGUMENT, "context", context='{"task": ')
        bad("end_session", StatusCode.NOT_FOUND, "session", session_id=str(uuid.UUID(int=0)))
        # The node still serves after all of that.
        self.assertEqual(self.ok(memory, "recall", query="red mug", n=1).memories[0].id, l1.memory_id)

    def test_executable_serves_all_seven(self):
        self.node("it_exe", db_path=self.wd.file("exe.db"))
        self.exercise_services("/it_exe/robotmem")
        self.assertTrue(os.path.getsize(self.wd.file("exe.db")) > 0)

    def test_component_loaded_through_load_node(self):
        container = self.spawn(Process(
            [container_executable(), "--ros-args", "-r", "__node:=it_container", "-r", "__ns:=/it_comp"],
            self.wd.file("container.log")))
        load = self.ros.node.create_client(LoadNode, "/it_comp/it_container/_container/load_node")
        unload = self.ros.node.create_client(UnloadNode, "/it_comp/it_container/_container/unload_node")
        listing = self.ros.node.create_client(ListNodes, "/it_comp/it_container/_container/list_nodes")
        self.assertTrue(load.wait_for_service(timeout_sec=30), container.output())
        self.assertTrue(listing.wait_for_service(timeout_sec=30), container.output())
        # LoadNode is no read to retry: a read first, until the container answers it.
        self.assertEqual(list(self.ros.call_retrying(listing, ListNodes.Request(), 30).full_node_names), [])

        def load_node(namespace, **params):
            rq = LoadNode.Request(package_name="robotmem_ros", plugin_name="robotmem_ros::RobotmemNode",
                                  node_namespace="/" + namespace)
            rq.parameters = [Parameter(k, value=v).to_parameter_msg() for k, v in params.items()]
            rq.extra_arguments = [Parameter("use_intra_process_comms", value=True).to_parameter_msg()]
            return self.ros.call_client(load, rq, timeout=30)

        # Invalid parameters: the load fails and the message names each of them.
        r = load_node("it_bad", db_path=self.wd.file("bad.db"), embeddings=False, batch_size=0,
                      durability="fast", perception_qos_reliability="sometimes")
        self.assertFalse(r.success)
        for name in ("batch_size", "durability", "perception_qos_reliability"):
            self.assertIn(name, r.error_message)
        self.assertNotIn("collection", r.error_message)
        # A parameter of the wrong type is named too.
        r = load_node("it_bad", db_path=self.wd.file("bad.db"), embeddings=False, max_queue="lots")
        self.assertFalse(r.success)
        self.assertIn("max_queue", r.error_message)
        self.assertFalse(os.path.exists(self.wd.file("bad.db")))

        r = load_node("it_comp", db_path=self.wd.file("comp.db"), embeddings=False, collection="arm")
        self.assertTrue(r.success, r.error_message)
        self.assertEqual(r.full_node_name, "/it_comp/robotmem")
        self.ros.wait_services("/it_comp/robotmem")
        self.exercise_services("/it_comp/robotmem")
        u = self.ros.call_client(unload, UnloadNode.Request(unique_id=r.unique_id), timeout=30)
        self.assertTrue(u.success, u.error_message)
        self.assertEqual(container.proc.poll(), None, "the container must outlive the unload")

    def test_executable_refuses_invalid_parameters(self):
        p = self.spawn(start_node(self.wd, "it_badexe", db_path=self.wd.file("bad.db"), batch_size=0,
                                  flush_interval_ms=-5, status_period_ms=10))
        rc = p.wait(30)
        self.assertNotEqual(rc, 0)
        out = p.output()
        self.assertIn("invalid parameters", out)
        for name in ("batch_size", "flush_interval_ms", "status_period_ms"):
            self.assertIn(name, out)
        self.assertFalse(os.path.exists(self.wd.file("bad.db")))

    def test_unopenable_database_answers_closed(self):
        # A directory where the file should be: the node starts, says why, answers CLOSED.
        os.mkdir(self.wd.file("is_a_dir.db"))
        self.node("it_closed", db_path=self.wd.file("is_a_dir.db"))
        r = self.ros.call("/it_closed/robotmem", "learn", insight="anything at all here")
        self.assertEqual(r.status, StatusCode.CLOSED, r.error)
        r = self.ros.call("/it_closed/robotmem", "recall", query="anything")
        self.assertEqual(r.status, StatusCode.CLOSED, r.error)
