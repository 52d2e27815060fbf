"""The memory node and the example client that learns from simulated grasp
episodes and recalls before the next one (database in /tmp by default).

    ros2 launch robotmem_ros example_episode.launch.py
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("db_path", default_value="/tmp/robotmem_example_episode.db"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare("robotmem_ros"), "launch", "robotmem.launch.py"])),
            launch_arguments={"namespace": "robot_a", "db_path": LaunchConfiguration("db_path")}.items(),
        ),
        Node(
            package="robotmem_ros",
            executable="robotmem_example_client",
            namespace="robot_a",
            output="screen",
            parameters=[{"memory": "/robot_a/robotmem", "episodes": 4}],
        ),
    ])
