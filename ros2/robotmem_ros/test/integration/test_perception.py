"""The perception topic and the process's end: batched writes, sequence gaps
counted as lost, recall finds what was published; SIGINT (executable and
launch) writes what is still queued; SIGKILL loses no acknowledged learn."""
import signal
import threading

from harness import NodeTest, start_launch, start_node, wait_for
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from robotmem_msgs.msg import NodeStatus, PerceptionData


class PerceptionTest(NodeTest):
    def setUp(self):
        super().setUp()
        self.status = {}
        self.status_lock = threading.Lock()
        self.subs = []
        self.pubs = []

    def tearDown(self):
        for s in self.subs:
            self.ros.node.destroy_subscription(s)
        for p in self.pubs:
            self.ros.node.destroy_publisher(p)
        super().tearDown()

    def watch_status(self, ns):
        """Keeps the newest NodeStatus of /ns/robotmem in self.status[ns]."""
        def on_status(m, ns=ns):
            with self.status_lock:
                self.status[ns] = m
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.subs.append(self.ros.node.create_subscription(NodeStatus, "/%s/robotmem/status" % ns, on_status, qos))

    def status_where(self, ns, what, timeout=20, **expect):
        def check():
            with self.status_lock:
                s = self.status.get(ns)
            if s is not None and all(getattr(s, k) == v for k, v in expect.items()):
                return s
            return None
        return wait_for(check, timeout, "%s status %s %r" % (ns, what, expect))

    def publisher(self, ns):
        pub = self.ros.node.create_publisher(PerceptionData, "/%s/perception" % ns,
                                             QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.pubs.append(pub)
        wait_for(lambda: pub.get_subscription_count() >= 1, 20, "the node's perception subscription")
        return pub

    @staticmethod
    def perception(source, seq, description):
        return PerceptionData(source_id=source, seq=seq, description=description,
                              perception_type=PerceptionData.TYPE_VISUAL, data=[seq % 256], tags=["it"])

    def test_batches_gaps_and_recall(self):
        self.node("it_perc", db_path=self.wd.file("perc.db"), batch_size=4, flush_interval_ms=100,
                  status_period_ms=100)
        self.watch_status("it_perc")
        pub = self.publisher("it_perc")
        colours = ["red", "green", "blue", "amber", "violet", "orange", "white", "black", "grey", "pink"]
        cam = [0, 1, 2, 5, 6, 7, 8, 9]  # 3 and 4 never arrive: 2 lost
        for seq in cam:
            pub.publish(self.perception("cam", seq, "camera frame %d: %s pallet on the conveyor belt"
                                        % (seq, colours[seq])))
        for seq in range(100, 105):
            pub.publish(self.perception("lidar", seq, "lidar sweep %d sees the loading dock" % seq))
        s = self.status_where("it_perc", "after 13 messages", perception_received=13, perception_written=13,
                              perception_queued=0)
        self.assertEqual((s.perception_lost, s.perception_dropped, s.perception_failed), (2, 0, 0))
        r = self.ok("/it_perc/robotmem", "recall", query="black pallet on the conveyor", n=3)
        self.assertIn("camera frame 7: black", r.memories[0].content)
        self.assertEqual(r.memories[0].perception_type, PerceptionData.TYPE_VISUAL)
        self.assertEqual(list(r.memories[0].perception_data), [7])
        r = self.ok("/it_perc/robotmem", "recall", query="lidar sweep loading dock", n=10)
        self.assertEqual(len([m for m in r.memories if "lidar sweep" in m.content]), 5)
        # A source that restarts its sequence is a new run, not a loss.
        pub.publish(self.perception("cam", 0, "camera restarted, frame 0 shows an empty conveyor"))
        s = self.status_where("it_perc", "after the restart", perception_written=14)
        self.assertEqual(s.perception_lost, 2)

    def sigint_flushes(self, ns, proc):
        self.watch_status(ns)
        self.ros.wait_services("/%s/robotmem" % ns)
        pub = self.publisher(ns)
        for seq in range(5):
            pub.publish(self.perception("arm_cam", seq, "queued frame %d of the shelf inventory" % seq))
        self.status_where(ns, "5 queued", perception_received=5, perception_queued=5, perception_written=0)
        self.assertEqual(proc.stop(signal.SIGINT, timeout=30), 0, proc.output())
        self.assertIn("shutdown: wrote 5 queued perception(s), 0 failed", proc.output())

    def test_sigint_writes_queued_perceptions(self):
        db = self.wd.file("sigint.db")
        slow = dict(batch_size=1000, flush_interval_ms=60000, status_period_ms=100)
        # The executable, then the launch file (component_container_mt; launch sends SIGINT).
        self.sigint_flushes("it_sigint", self.spawn(start_node(self.wd, "it_sigint", db_path=db, **slow)))
        params = self.wd.params_file("launch-params.yaml", embeddings=False, **slow)
        self.sigint_flushes("it_sigint2", self.spawn(start_launch(
            self.wd, "robotmem.launch.py", "launch", "namespace:=it_sigint2", "db_path:=" + db,
            "params_file:=" + params)))
        self.node("it_sigint3", db_path=db)
        r = self.ok("/it_sigint3/robotmem", "recall", query="queued frame shelf inventory", n=20)
        self.assertEqual(len([m for m in r.memories if m.content.startswith("queued frame")]), 5)

    def test_sigkill_loses_no_acknowledged_learn(self):
        for durability in ("full", "normal"):
            db = self.wd.file("kill-%s.db" % durability)
            ns = "it_kill_" + durability
            proc = self.node(ns, db_path=db, durability=durability)
            acked = []
            for i in range(40):
                r = self.ok("/%s/robotmem" % ns, "learn",
                            insight="pallet %d stored in aisle %d, bin %d, checked by the robot" % (i, i % 7, i * 3))
                acked.append(r.memory_id)
            proc.stop(signal.SIGKILL)
            self.assertEqual(proc.proc.returncode, -signal.SIGKILL)
            ns2 = ns + "_again"
            self.node(ns2, db_path=db, durability=durability)
            r = self.ok("/%s/robotmem" % ns2, "recall", query="pallet aisle bin robot", n=100)
            self.assertEqual(sorted(m.id for m in r.memories), sorted(acked), durability)
