"""rclpy smoke test of the generated robotmem_msgs Python types and typesupport.

  rclpy_smoke.py serve READY_FILE   serves robotmem_msgs/srv/Learn on /robotmem_smoke/learn
                                    (answers like the node would; no database), writes
                                    READY_FILE once the service exists, stops after 90 s
  rclpy_smoke.py call READY_FILE    waits for READY_FILE, calls the service twice (an OK
                                    learn, an empty insight -> INVALID_ARGUMENT), checks
                                    the responses; exit 0 on success

Run with the DDS traffic confined to 127.0.0.1 (see scripts/ros2-interfaces.sh).
"""
import os
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from robotmem_msgs.msg import StatusCode
from robotmem_msgs.srv import Learn

SERVICE = "/robotmem_smoke/learn"


def serve(ready_file):
    rclpy.init()
    node = Node("robotmem_smoke_server")

    def on_learn(req, resp):
        if not req.insight.strip():
            resp.status = StatusCode.INVALID_ARGUMENT
            resp.error = "insight is blank"
            return resp
        resp.status = StatusCode.OK
        resp.memory_id = 42
        resp.dup_method = Learn.Response.DUP_NONE
        resp.category = "observation"
        resp.confidence = 0.9
        resp.tags = list(req.tags) + ["from:" + (req.collection or "default")]
        return resp

    node.create_service(Learn, SERVICE, on_learn)
    with open(ready_file, "w") as f:
        f.write(str(os.getpid()))
    deadline = time.monotonic() + 90
    try:
        while rclpy.ok() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.2)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # SIGTERM from the test script: rclpy's signal handler shut the context down
    node.destroy_node()
    rclpy.try_shutdown()


def call(ready_file):
    deadline = time.monotonic() + 30
    while not os.path.exists(ready_file):
        if time.monotonic() > deadline:
            print("smoke: the server did not start", file=sys.stderr)
            return 1
        time.sleep(0.1)
    rclpy.init()
    node = Node("robotmem_smoke_client")
    client = node.create_client(Learn, SERVICE)
    if not client.wait_for_service(timeout_sec=20.0):
        print("smoke: service not discovered", file=sys.stderr)
        return 1

    def request(req):
        fut = client.call_async(req)
        rclpy.spin_until_future_complete(node, fut, timeout_sec=20.0)
        if not fut.done():
            raise RuntimeError("no response")
        return fut.result()

    req = Learn.Request(insight="grasp of red mug succeeded at 12.5N",
                        context='{"task": {"success": true}}', collection="robot_a",
                        tags=["kitchen"])
    t0 = time.monotonic()
    ok = request(req)
    ms = (time.monotonic() - t0) * 1000
    bad = request(Learn.Request(insight="  "))
    checks = [
        ok.status == StatusCode.OK, ok.error == "", ok.memory_id == 42,
        list(ok.tags) == ["kitchen", "from:robot_a"], abs(ok.confidence - 0.9) < 1e-12,
        bad.status == StatusCode.INVALID_ARGUMENT, bad.error == "insight is blank",
    ]
    node.destroy_node()
    rclpy.try_shutdown()
    if not all(checks):
        print("smoke: unexpected responses:", ok, bad, checks, file=sys.stderr)
        return 1
    print("smoke: Learn served by rclpy and called over loopback DDS: "
          "memory_id=%d tags=%s (round trip %.1f ms); blank insight -> status %d"
          % (ok.memory_id, list(ok.tags), ms, bad.status))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("serve", "call"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(serve(sys.argv[2]) or 0 if sys.argv[1] == "serve" else call(sys.argv[2]))
