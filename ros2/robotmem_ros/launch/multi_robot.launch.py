"""Several robots' memories in one process: one component container, one
robotmem node per robot namespace, each with its own database file.

    ros2 launch robotmem_ros multi_robot.launch.py robots:=robot_a,robot_b
    ros2 service call /robot_a/robotmem/learn robotmem_msgs/srv/Learn "{insight: 'dock A is free'}"
    ros2 service call /robot_b/robotmem/recall robotmem_msgs/srv/Recall "{query: 'dock'}"   # robot_b's own memory

The components share the process and librobotmem (loaded once), not their
databases: /robot_a/robotmem writes <db_dir>/robot_a.db, /robot_b/robotmem
<db_dir>/robot_b.db. Each robot's sensors publish on /<robot>/perception. To let
robots share one memory instead, give them the same db_path and a collection each.
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import ComposableNodeContainer
from launch_ros.descriptions import ComposableNode
from launch_ros.substitutions import FindPackageShare


def _container(context):
    robots = [r.strip() for r in LaunchConfiguration("robots").perform(context).split(",") if r.strip()]
    db_dir = os.path.expanduser(LaunchConfiguration("db_dir").perform(context))
    os.makedirs(db_dir, mode=0o700, exist_ok=True)
    params_file = LaunchConfiguration("params_file")
    nodes = [
        ComposableNode(
            package="robotmem_ros",
            plugin="robotmem_ros::RobotmemNode",
            name="robotmem",
            namespace=robot,
            parameters=[params_file, {"db_path": os.path.join(db_dir, robot + ".db"), "collection": robot}],
        )
        for robot in robots
    ]
    return [ComposableNodeContainer(
        name="robotmem_fleet_container",
        namespace="",
        package="rclcpp_components",
        executable="component_container_mt",
        output="screen",
        composable_node_descriptions=nodes,
    )]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robots", default_value="robot_a,robot_b",
                              description="comma-separated robot namespaces"),
        DeclareLaunchArgument("db_dir", default_value="~/.robotmem/fleet",
                              description="one <robot>.db per robot in this directory"),
        DeclareLaunchArgument(
            "params_file",
            default_value=PathJoinSubstitution([FindPackageShare("robotmem_ros"), "config", "params.yaml"]),
            description="node parameters (YAML), shared by the robots"),
        OpaqueFunction(function=_container),
    ])
