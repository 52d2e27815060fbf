"""robotmem memory node composed into a multi-threaded component container.

    ros2 launch robotmem_ros robotmem.launch.py
    ros2 launch robotmem_ros robotmem.launch.py namespace:=robot_a db_path:=/var/lib/robot_a/memory.db

Services: /<namespace>/robotmem/{learn,recall,save_perception,forget,update,
start_session,end_session}; status: /<namespace>/robotmem/status (latched);
perception subscription: /<namespace>/perception.

component_container_mt runs the node's callback groups on several threads, so
recalls (reentrant group) do not wait behind writes. Other components that
publish perception can be loaded into the same container (intra-process).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import ComposableNodeContainer
from launch_ros.descriptions import ComposableNode
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    namespace = LaunchConfiguration("namespace")
    db_path = LaunchConfiguration("db_path")
    params_file = LaunchConfiguration("params_file")

    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="",
                              description="namespace of the memory node (e.g. the robot's name)"),
        DeclareLaunchArgument(
            "db_path", default_value="",
            description="robotmem database file (empty: ~/.robotmem/memory.db, directory created 0700)"),
        DeclareLaunchArgument(
            "params_file",
            default_value=PathJoinSubstitution([FindPackageShare("robotmem_ros"), "config", "params.yaml"]),
            description="node parameters (YAML)"),
        ComposableNodeContainer(
            name="robotmem_container",
            namespace=namespace,
            package="rclcpp_components",
            executable="component_container_mt",
            output="screen",
            composable_node_descriptions=[
                ComposableNode(
                    package="robotmem_ros",
                    plugin="robotmem_ros::RobotmemNode",
                    name="robotmem",
                    namespace=namespace,
                    parameters=[params_file, {"db_path": db_path}],
                    extra_arguments=[{"use_intra_process_comms": True}],
                ),
            ],
        ),
    ])
