"""Runs a launch file through launch's Python API (there is no `ros2` CLI here):

    launch_runner.py FILE [name:=value ...] [--exit-with EXECUTABLE]

what `ros2 launch FILE name:=value` does. With --exit-with, the launch is shut
down when the process of that executable exits, and this exits with its code
(so a test can wait for a client that ends). SIGINT / SIGTERM shut the launch
down as `ros2 launch` does (SIGINT to every process, then escalation).
"""
import os
import sys

import harness  # noqa: F401  (sets the loopback-only environment first)
from launch import LaunchDescription, LaunchService
from launch.actions import EmitEvent, IncludeLaunchDescription, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource


def main():
    args = sys.argv[1:]
    exit_with = None
    if "--exit-with" in args:
        i = args.index("--exit-with")
        exit_with = args[i + 1]
        del args[i:i + 2]
    path, launch_args = args[0], [a.split(":=", 1) for a in args[1:]]
    result = {}

    def on_exit(event, _context):
        if os.path.basename(event.action.process_details["cmd"][0]) == exit_with:
            result["rc"] = event.returncode
            return EmitEvent(event=Shutdown(reason="%s exited with %d" % (exit_with, event.returncode)))
        return None

    actions = [IncludeLaunchDescription(PythonLaunchDescriptionSource(path), launch_arguments=launch_args)]
    if exit_with:
        actions.append(RegisterEventHandler(OnProcessExit(on_exit=on_exit)))
    service = LaunchService()
    service.include_launch_description(LaunchDescription(actions))
    rc = service.run()
    if exit_with:
        if "rc" not in result:
            print("launch_runner: %s never exited" % exit_with, flush=True)
            sys.exit(4)
        sys.exit(result["rc"])
    sys.exit(rc)


if __name__ == "__main__":
    main()
