#!/usr/bin/env bash
# Set up planner on a ROS 2 install (Jazzy or Kilted, Ubuntu 24.04), from this checkout inside a
# colcon workspace's src/:
#   the package's apt dependencies through rosdep;
#   a venv that sees the ROS Python's packages (--system-site-packages) with what apt lacks
#   (requirements/ros.txt), numpy pinned to the ROS Python's own;
#   colcon build of this package; the embedded LLM joined into ~/.cache/planner.
# Then, in every shell: source install/setup.bash && export PYTHONPATH="$PLANNER_VENV_SITE:$PYTHONPATH"
# (the script prints the line). Not run on this project's machine, which has no ROS 2 install.
set -euo pipefail
: "${ROS_DISTRO:?source /opt/ros/<distro>/setup.bash first}"
package_dir=$(cd "$(dirname "$0")/.." && pwd)
workspace=${PLANNER_WORKSPACE:-$(cd "$package_dir/../.." && pwd)}
venv=${PLANNER_VENV:-$HOME/.local/share/planner/venv}
say() { printf '\033[1m[setup-ros]\033[0m %s\n' "$*"; }

say "apt dependencies of package.xml (rosdep, $ROS_DISTRO)"
rosdep install --from-paths "$package_dir" --ignore-src -y --rosdistro "$ROS_DISTRO"
command -v espeak-ng >/dev/null || sudo apt-get install -y espeak-ng  # spoken replies

if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv on top of $(command -v python3)"
  python3 -m venv --system-site-packages "$venv"
fi
constraints=$(mktemp)
python3 -c "import numpy; print(f'numpy=={numpy.__version__}')" > "$constraints"
say "Python packages apt lacks, with $(cat "$constraints") kept"
"$venv/bin/python" -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu -c "$constraints"
"$package_dir/scripts/install-llama.sh" "$venv/bin/python" "$package_dir/requirements/ros.txt"
"$venv/bin/python" -m pip install -q -r "$package_dir/requirements/ros.txt" -c "$constraints"
rm -f "$constraints"

say "colcon build in $workspace"
(cd "$workspace" && colcon build --packages-select planner)
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# shellcheck disable=SC1091
source "$workspace/install/setup.bash"
PYTHONPATH="$site:${PYTHONPATH:-}" python3 -c "import sys; from planner.cli import main; sys.exit(main(['model', 'install']))"
say "ready. In each shell: source $workspace/install/setup.bash && export PYTHONPATH=\"$site:\$PYTHONPATH\""
say "then: ros2 launch planner bringup.launch.py [sim:=false robot:=... ]"
