"""The launch files, started through launch's Python API (launch_runner.py):
robotmem.launch.py (component_container_mt, intra-process comms on) with a late
NodeStatus subscriber in another process, multi_robot.launch.py (two robots, two
namespaces, two files), example_episode.launch.py (the example client against a
node that starts at the same moment, repeatedly)."""
import os

from ament_index_python.packages import get_package_share_directory

from harness import NodeTest, probe_result, start_launch, status_probe


class LaunchTest(NodeTest):
    def test_status_latched_for_a_late_subscriber_in_another_process(self):
        # The launch file's settings (use_intra_process_comms: True), and a
        # republish period far beyond the test: only the latched sample can arrive.
        # The shipped config/params.yaml, two values changed: it must apply to the composed node.
        with open(os.path.join(get_package_share_directory("robotmem_ros"), "config", "params.yaml")) as f:
            shipped = f.read()
        edited = shipped.replace("status_period_ms: 5000", "status_period_ms: 3600000").replace(
            "embeddings: true", "embeddings: false")
        self.assertEqual(edited.count("3600000") + edited.count("embeddings: false"), 2)
        params = self.wd.file("params.yaml")
        with open(params, "w") as f:
            f.write(edited)
        db = self.wd.file("latched.db")
        self.spawn(start_launch(self.wd, "robotmem.launch.py", "launch", "namespace:=it_latch",
                                "db_path:=" + db, "params_file:=" + params))
        self.ros.wait_services("/it_latch/robotmem")
        # The parameter file applies to the composed node.
        self.assertEqual(self.ros.parameters("/it_latch/robotmem", ["status_period_ms", "embeddings"]),
                         {"status_period_ms": 3600000, "embeddings": False})
        self.ok("/it_latch/robotmem", "learn", insight="the latched status must reach late subscribers")
        # Subscribes only now, from another process.
        probe = self.spawn(status_probe("/it_latch/robotmem/status", 8, self.wd.file("probe.log")))
        status, out = probe_result(probe, 30)
        self.assertIsNotNone(status, "no NodeStatus for a late subscriber in another process:\n" + out)
        self.assertTrue(status["ready"])
        self.assertEqual(status["db_path"], db)
        # A second late subscriber gets it as well, after a write.
        probe = self.spawn(status_probe("/it_latch/robotmem/status", 8, self.wd.file("probe2.log")))
        status, out = probe_result(probe, 30)
        self.assertIsNotNone(status, out)

    def test_two_robots_two_namespaces_two_files(self):
        fleet = self.wd.file("fleet")
        params = self.wd.params_file("params.yaml", embeddings=False)
        self.spawn(start_launch(self.wd, "multi_robot.launch.py", "launch", "robots:=it_ra,it_rb",
                                "db_dir:=" + fleet, "params_file:=" + params))
        a, b = "/it_ra/robotmem", "/it_rb/robotmem"
        self.ros.wait_services(a)
        self.ros.wait_services(b)
        la = self.ok(a, "learn", insight="dock A is free for robot a", tags=["dock"])
        lb = self.ok(b, "learn", insight="loading bay two has a spill, robot b avoids it")
        self.assertEqual([m.id for m in self.ok(a, "recall", query="dock free", n=5).memories], [la.memory_id])
        self.assertEqual(self.ok(b, "recall", query="dock free", n=5).memories, [])
        self.assertEqual([m.id for m in self.ok(b, "recall", query="spill loading bay", n=5).memories],
                         [lb.memory_id])
        self.assertEqual(self.ok(a, "recall", query="spill loading bay", n=5).memories, [])
        self.assertEqual(self.ok(a, "recall", query="dock", n=5).memories[0].collection, "it_ra")
        self.assertEqual(sorted(f for f in os.listdir(fleet) if f.endswith(".db")), ["it_ra.db", "it_rb.db"])
        for ns in ("it_ra", "it_rb"):
            probe = self.spawn(status_probe("/%s/robotmem/status" % ns, 8, self.wd.file(ns + "-probe.log")))
            status, out = probe_result(probe, 30)
            self.assertIsNotNone(status, out)
            self.assertEqual(status["db_path"], os.path.join(fleet, ns + ".db"))
            self.assertEqual(status["collection"], ns)

    def test_example_episode_client_never_races_the_node(self):
        # Node and client start together; the client must wait for every service
        # it calls (it used to wait for learn only and fail on recall).
        runs = int(os.environ.get("ROBOTMEM_IT_EPISODE_RUNS", "5"))
        for i in range(runs):
            p = self.spawn(start_launch(self.wd, "example_episode.launch.py", "episode-%d" % i,
                                        "db_path:=" + self.wd.file("episode-%d.db" % i),
                                        exit_with="robotmem_example_client"))
            rc = p.wait(120)
            out = p.output()
            self.assertEqual(rc, 0, "run %d of %d:\n%s" % (i + 1, runs, out[-3000:]))
            self.assertIn("episode 4: memory says 15.0 N worked", out)
            self.assertNotIn("no response", out)
