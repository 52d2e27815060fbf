"""A NodeStatus subscriber in a process of its own, started when the test wants a
late subscriber: reliable + transient_local, depth 1, the node's QoS.

    status_probe.py TOPIC TIMEOUT_S [FIELD=VALUE]

Prints `STATUS {json}` for the first message (or the first whose FIELD equals
VALUE) and exits 0; exits 3 when none came within TIMEOUT_S. The environment
(domain, loopback-only profile) is the harness's.
"""
import json
import sys
import time

import harness  # noqa: F401  (sets the loopback-only environment first)
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from robotmem_msgs.msg import NodeStatus

FIELDS = ("ready", "status", "error", "db_path", "collection", "embedding_state", "embedding_model",
          "embedding_reason", "embedding_pending", "learned", "recalls", "perceptions_saved",
          "perception_received", "perception_written", "perception_failed", "perception_dropped",
          "perception_lost", "perception_queued")


def main():
    topic, timeout = sys.argv[1], float(sys.argv[2])
    until = sys.argv[3].split("=", 1) if len(sys.argv) > 3 else None
    rclpy.init()
    node = rclpy.create_node("robotmem_status_probe")
    got = []

    def on_status(m):
        d = {f: getattr(m, f) for f in FIELDS}
        if until is None or str(d[until[0]]).lower() == until[1].lower():
            got.append(d)

    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(NodeStatus, topic, on_status, qos)
    started = time.monotonic()
    deadline = started + timeout
    while not got and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    if got:
        print("STATUS " + json.dumps(got[0]), flush=True)
        print("after %.3f s" % (time.monotonic() - started), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    sys.exit(0 if got else 3)


if __name__ == "__main__":
    main()
