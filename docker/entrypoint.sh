#!/usr/bin/env bash
# The ROS install, this workspace and the venv's packages, then the command.
set -e
source /opt/ros/jazzy/setup.bash
source /ws/install/setup.bash
export PYTHONPATH="$(/opt/planner-venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"):${PYTHONPATH:-}"
exec "$@"
