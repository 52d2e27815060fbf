"""Runs the robotmem_ros integration tests (test_*.py here) against the real node
and writes a JUnit file that `colcon test-result` reads.

    run_tests.py [--xunit-file FILE] [-k PATTERN ...]

Needs the workspace's install/setup.bash sourced (rclpy, launch, launch_ros,
robotmem_msgs, robotmem_ros, rclcpp_components) and ROBOTMEM_FASTDDS_PROFILE
naming the loopback-only Fast DDS profile. Registered by CMakeLists.txt as the
ament test `test_robotmem_node` where rclcpp is found.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
import unittest
from xml.sax.saxutils import quoteattr, escape

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# The ROS logs of every process of the run (this one, the nodes, launch) go to a
# directory of the run's own, not ~/.ros/log: removed when all passed, else kept.
LOG_DIR = tempfile.mkdtemp(prefix="robotmem-ros-it-logs-")
os.environ["ROS_LOG_DIR"] = LOG_DIR

import harness  # noqa: E402


class Result(unittest.TextTestResult):
    """Times each test, removes a passed test's work directory, prints a failed
    test's process logs (the directory is kept and named)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.cases = []  # (test, seconds, kind, text)

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _record(self, test, kind, text=""):
        self.cases.append((test, time.monotonic() - self._t0, kind, text))
        wd = getattr(test, "wd", None)
        if wd is None:
            return
        if kind in ("pass", "skip"):
            wd.remove()
            return
        self.stream.write("\n--- %s: work directory kept: %s\n" % (test.id(), wd.path))
        for p in getattr(test, "procs", []):
            tail = "\n".join(p.output().splitlines()[-40:])
            self.stream.write("--- %s (exit %s):\n%s\n" % (" ".join(p.argv[:3]), p.proc.returncode, tail))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failure", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skip", reason)


def write_junit(path, result, seconds):
    n = len(result.cases)
    fails = sum(1 for c in result.cases if c[2] == "failure")
    errors = sum(1 for c in result.cases if c[2] == "error")
    skips = sum(1 for c in result.cases if c[2] == "skip")
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<testsuite name="test_robotmem_node" tests="%d" failures="%d" errors="%d" skipped="%d" time="%.3f">'
             % (n, fails, errors, skips, seconds)]
    for test, secs, kind, text in result.cases:
        cls, name = test.id().rsplit(".", 1)
        lines.append('  <testcase classname=%s name=%s time="%.3f">' % (quoteattr(cls), quoteattr(name), secs))
        if kind == "failure":
            lines.append('    <failure message="failed">%s</failure>' % escape(text))
        elif kind == "error":
            lines.append('    <error message="error">%s</error>' % escape(text))
        elif kind == "skip":
            lines.append('    <skipped message=%s/>' % quoteattr(text))
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xunit-file")
    ap.add_argument("-k", action="append", default=[], help="run only tests whose id contains this")
    args = ap.parse_args()
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    if args.k:
        def pick(s):
            for t in s:
                if isinstance(t, unittest.TestSuite):
                    yield from pick(t)
                elif any(k in t.id() for k in args.k):
                    yield t
        suite = unittest.TestSuite(list(pick(suite)))
    print("robotmem_ros integration tests: ROS_DOMAIN_ID=%s, DDS on 127.0.0.1 only (%s)"
          % (os.environ["ROS_DOMAIN_ID"], os.environ["FASTDDS_DEFAULT_PROFILES_FILE"]), flush=True)
    t0 = time.monotonic()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Result)
    try:
        result = runner.run(suite)
    finally:
        harness.shutdown()
    if args.xunit_file:
        write_junit(args.xunit_file, result, time.monotonic() - t0)
    if result.wasSuccessful():
        shutil.rmtree(LOG_DIR, ignore_errors=True)
    else:
        print("ROS logs of the run kept in %s" % LOG_DIR)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
