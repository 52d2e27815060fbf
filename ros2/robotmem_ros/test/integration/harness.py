"""Shared by the robotmem_ros integration tests: the real node, over DDS on 127.0.0.1.

Every process the tests start (the node, component_container_mt, the launch
runner, the status probe) and the test process itself use the same loopback-only
environment (see `loopback_env`): their own ROS_DOMAIN_ID, discovery limited to
localhost, and a Fast DDS profile whose only transport is UDPv4 whitelisted to
127.0.0.1. Nothing here sends a packet to another address.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def loopback_env():
    """Sets the loopback-only DDS environment in os.environ (before rclpy starts)."""
    # A domain of the tests' own, whatever the caller's ROS_DOMAIN_ID is (a
    # developer's robots must not see test nodes); ROBOTMEM_IT_DOMAIN_ID pins it.
    # The processes the tests start inherit ROBOTMEM_IT_DOMAIN_ID and so join it.
    domain = os.environ.get("ROBOTMEM_IT_DOMAIN_ID") or str(150 + os.getpid() % 80)
    os.environ["ROBOTMEM_IT_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"] = domain
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.pop("ROS_STATIC_PEERS", None)
    profile = os.environ.get("ROBOTMEM_FASTDDS_PROFILE", "")
    if not os.path.isfile(profile):
        raise RuntimeError("ROBOTMEM_FASTDDS_PROFILE must name the loopback-only Fast DDS profile (got %r)" % profile)
    os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = profile
    os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = profile
    os.environ["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"


loopback_env()

import rclpy  # noqa: E402  (after the environment is set)
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.parameter import parameter_value_to_python  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
from ament_index_python.packages import get_package_prefix, get_package_share_directory  # noqa: E402
from robotmem_msgs import srv  # noqa: E402
from robotmem_msgs.msg import StatusCode  # noqa: E402

SERVICES = {
    "learn": srv.Learn,
    "recall": srv.Recall,
    "save_perception": srv.SavePerception,
    "forget": srv.Forget,
    "update": srv.Update,
    "start_session": srv.StartSession,
    "end_session": srv.EndSession,
}
OK = StatusCode.OK


def node_executable():
    return os.path.join(get_package_prefix("robotmem_ros"), "lib", "robotmem_ros", "robotmem_node")


def example_client_executable():
    return os.path.join(get_package_prefix("robotmem_ros"), "lib", "robotmem_ros", "robotmem_example_client")


def container_executable():
    return os.path.join(get_package_prefix("rclcpp_components"), "lib", "rclcpp_components", "component_container_mt")


def launch_file(name):
    return os.path.join(get_package_share_directory("robotmem_ros"), "launch", name)


class Workdir:
    """A temporary directory for databases, parameter files and process logs;
    removed at the end unless the test failed (then its path is printed)."""

    def __init__(self, name):
        self.path = tempfile.mkdtemp(prefix="robotmem-ros-it-%s-" % name)

    def file(self, name):
        return os.path.join(self.path, name)

    def params_file(self, name, **params):
        """A ROS parameter YAML for every node ("/**", as config/params.yaml: the
        only wildcard that launch_ros applies to composable nodes)."""
        path = self.file(name)
        with open(path, "w") as f:
            f.write("/**:\n  ros__parameters:\n")
            for k, v in params.items():
                f.write("    %s: %s\n" % (k, json.dumps(v)))
        return path

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


class Process:
    """A child process in its own process group, output to a log file."""

    def __init__(self, argv, log_path, env=None):
        self.argv = argv
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env or os.environ.copy(),
                                     start_new_session=True)

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def send(self, sig):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def wait(self, timeout):
        return self.proc.wait(timeout)

    def stop(self, sig=signal.SIGINT, timeout=15):
        """Signals the whole group and waits; SIGKILL if it does not end. Returns the exit code."""
        if self.proc.poll() is None:
            self.send(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.send(signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()
        return self.proc.returncode


class Ros:
    """The test process's own rclpy node, spun by a background executor."""

    def __init__(self):
        rclpy.init()
        self.node = rclpy.create_node("robotmem_it_%d" % os.getpid())
        self.executor = MultiThreadedExecutor(num_threads=2)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        self.clients = {}

    def client(self, memory, name):
        key = (memory, name)
        if key not in self.clients:
            self.clients[key] = self.node.create_client(SERVICES[name], memory + "/" + name)
        return self.clients[key]

    def wait_services(self, memory, names=SERVICES, timeout=30.0):
        deadline = time.monotonic() + timeout
        for name in names:
            c = self.client(memory, name)
            if not c.wait_for_service(timeout_sec=max(0.1, deadline - time.monotonic())):
                raise AssertionError("service %s/%s not available after %.0f s" % (memory, name, timeout))
        # wait_for_service sees the server from the client's side only; until the
        # server has matched this client's response reader too, Fast DDS drops the
        # response ("failed to send response (timeout)"). A read, retried, settles it.
        rq = srv.Recall.Request(query="warm up", n=1)
        self.call_retrying(self.client(memory, "recall"), rq, deadline - time.monotonic())

    def call_retrying(self, client, request, timeout):
        """A read-only call repeated (1 s each) until it is answered."""
        deadline = time.monotonic() + max(timeout, 1.0)
        while True:
            try:
                return self.call_client(client, request, 1.0)
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def call(self, memory, name, timeout=20.0, **fields):
        """Calls memory/name with the request fields given; returns the response."""
        rq = SERVICES[name].Request()
        for k, v in fields.items():
            setattr(rq, k, v)
        return self.call_client(self.client(memory, name), rq, timeout)

    def call_client(self, client, request, timeout=20.0):
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            client.remove_pending_request(future)
            raise AssertionError("no response from %s within %.0f s" % (client.srv_name, timeout))
        return future.result()

    def parameters(self, node_name, names, timeout=20.0):
        """The values of a node's parameters, through its get_parameters service."""
        client = self.node.create_client(GetParameters, node_name + "/get_parameters")
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise AssertionError("no %s/get_parameters" % node_name)
            r = self.call_client(client, GetParameters.Request(names=list(names)), timeout)
            return {n: parameter_value_to_python(v) for n, v in zip(names, r.values)}
        finally:
            self.node.destroy_client(client)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown()


def status_probe(topic, timeout, log_path, until=None):
    """Starts status_probe.py in another process: it subscribes to the NodeStatus
    topic only now (a late subscriber, reliable + transient_local) and prints the
    first message (or the first one matching `until`, "field=value") as JSON."""
    argv = [sys.executable, os.path.join(HERE, "status_probe.py"), topic, str(timeout)]
    if until:
        argv.append(until)
    return Process(argv, log_path)


def probe_result(probe, timeout):
    """The status the probe printed, or None (with its output) when it got none."""
    rc = probe.wait(timeout)
    out = probe.output()
    for line in out.splitlines():
        if line.startswith("STATUS "):
            return json.loads(line[len("STATUS "):]), out
    assert rc != 0, out
    return None, out


def wait_for(predicate, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %.1f s waiting for %s (last: %r)" % (timeout, what, last))


def start_node(wd, namespace, log_name=None, **params):
    """The robotmem_node executable in /namespace with these parameters (a params file)."""
    params.setdefault("embeddings", False)
    pf = wd.params_file("%s-params.yaml" % (log_name or namespace), **params)
    argv = [node_executable(), "--ros-args", "-r", "__ns:=/" + namespace, "--params-file", pf]
    return Process(argv, wd.file("%s.log" % (log_name or namespace)))


def start_launch(wd, name, log_name, *launch_args, exit_with=None):
    """launch_runner.py with a launch file of robotmem_ros (name), `k:=v` arguments."""
    argv = [sys.executable, os.path.join(HERE, "launch_runner.py"), launch_file(name)] + list(launch_args)
    if exit_with:
        argv += ["--exit-with", exit_with]
    # launch_ros writes each node's parameters to a launch_params_* file in TMPDIR
    # and leaves it there: in the work directory, it goes with it.
    return Process(argv, wd.file(log_name + ".log"), env=dict(os.environ, TMPDIR=wd.path))


_ROS = None


def ros():
    """The test process's rclpy node (one per process: rclpy.init once)."""
    global _ROS
    if _ROS is None:
        _ROS = Ros()
    return _ROS


def shutdown():
    global _ROS
    if _ROS is not None:
        _ROS.close()
        _ROS = None


class NodeTest(unittest.TestCase):
    """A test with a work directory and child processes. Processes still running
    at the end are stopped with SIGINT. run_tests.py removes the directory of a
    passed test and prints the process logs of a failed one (and keeps them)."""

    def setUp(self):
        self.wd = Workdir(self.id().rsplit(".", 1)[-1])
        self.procs = []
        self.ros = ros()

    def tearDown(self):
        for p in self.procs:
            p.stop()

    def spawn(self, proc):
        self.procs.append(proc)
        return proc

    def node(self, namespace, **params):
        """robotmem_node in /namespace, started and serving all seven services."""
        p = self.spawn(start_node(self.wd, namespace, **params))
        self.ros.wait_services("/%s/robotmem" % namespace)
        return p

    def ok(self, memory, name, **fields):
        """A call that must succeed (status OK); returns the response."""
        r = self.ros.call(memory, name, **fields)
        self.assertEqual(r.status, OK, "%s/%s: %d %s" % (memory, name, r.status, r.error))
        return r
