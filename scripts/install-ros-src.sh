#!/usr/bin/env bash
# Build the ROS 2 packages PyPI lacks into the venv, from their upstream sources:
# vision_msgs, tf2_msgs, composition_interfaces, tf2 and tf2_py (CMake, against the ROS 2 wheels),
# tf2_ros_py, launch, launch_ros and the ros2 CLI (pure Python).
#   scripts/install-ros-src.sh [SOURCES]    SOURCES: a folder of those packages (default ../shared/ros-src)
# Without the folder it does nothing: the stack runs without them (TF off, no `ros2 launch`).
# A package Python already imports from outside the venv (a ROS 2 install's) is left alone, never
# shadowed; one built before is rebuilt only when its sources changed, so a second run takes seconds.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${PLANNER_VENV_DIR:-$repo/.venv}
sources=${1:-$repo/../shared/ros-src}
python=$venv/bin/python
say() { printf '\033[1m[ros-src]\033[0m %s\n' "$*"; }

if [ ! -d "$sources" ]; then
  say "no ROS 2 sources at $sources: skipped (TF, vision_msgs and ros2 launch come from a ROS 2 install)"
  exit 0
fi
sources=$(cd "$sources" && pwd)
prefix=$("$python" -c "import sys; print(sys.prefix)")
work=$repo/build/ros-src
stamps=$venv/.ros-src
mkdir -p "$work" "$stamps"

# `ros2 launch` and `ros2 pkg` find packages through AMENT_PREFIX_PATH, which a ROS install's setup
# script sets; in the venv a startup hook adds the venv's prefix, after any already there.
site=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cat >"$site/planner_ament_prefix.pth" <<'PTH'
import os, sys; os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join(dict.fromkeys([*filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)), sys.prefix]))
PTH

# package  kind  module that shows it is installed
packages=(
  "tf2_msgs cmake tf2_msgs.msg"
  "vision_msgs cmake vision_msgs.msg"
  "composition_interfaces cmake composition_interfaces.srv"
  "tf2 cmake tf2_py"
  "tf2_py cmake tf2_py"
  "tf2_ros_py python tf2_ros"
  "rosidl_runtime_py python rosidl_runtime_py"
  "launch python launch"
  "launch_xml python launch_xml"
  "launch_yaml python launch_yaml"
  "launch_ros python launch_ros"
  "ros2cli python ros2cli"
  "ros2launch python ros2launch"
  "ros2pkg python ros2pkg"
  "ros2node python ros2node"
  "ros2topic python ros2topic"
  "ros2param python ros2param"
  "ros2run python ros2run"
  "ros2service python ros2service"
  "ros2action python ros2action"
  "ros2interface python ros2interface"
  "ros2lifecycle python ros2lifecycle"
)

# Where Python finds a module, outside this venv: "" when it does not or only in the venv.
provided_elsewhere() {  # run from / : the checkout's own launch/ folder is no package
  (cd / && "$python" - "$1" "$prefix") <<'PY'
import importlib.util, os, sys
module, prefix = sys.argv[1], os.path.realpath(sys.argv[2])
try:
    spec = importlib.util.find_spec(module)
except (ImportError, ValueError):
    spec = None
origin = os.path.realpath(spec.origin or next(iter(spec.submodule_search_locations or []), "")) if spec else ""
print(origin if origin and not origin.startswith(prefix + os.sep) else "")
PY
}

# A package is built again when its sources, the Python or the CMake file injected into its build change.
fingerprint() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$python"; sha256sum "$repo/cmake/ros-wheels.cmake") | sha256sum | cut -d' ' -f1; }

needed=()
for entry in "${packages[@]}"; do
  read -r name kind module <<<"$entry"
  [ -d "$sources/$name" ] || { echo "install-ros-src: $sources has no $name" >&2; exit 1; }
  sum=$(fingerprint "$sources/$name")
  if [ "$(cat "$stamps/$name" 2>/dev/null)" = "$sum" ]; then
    continue
  fi
  if [ ! -f "$stamps/$name" ] && elsewhere=$(provided_elsewhere "$module") && [ -n "$elsewhere" ]; then
    say "$name: already installed ($elsewhere), left alone"
    continue
  fi
  needed+=("$entry $sum")
done
if [ ${#needed[@]} -eq 0 ]; then
  say "ROS 2 packages from $sources up to date"
  exit 0
fi

say "building ${#needed[@]} ROS 2 package(s) from $sources into $venv (first time: ~3 min)"
"$python" -m pip install -q --no-deps -r "$repo/requirements/ros-src.txt"
for entry in "${needed[@]}"; do
  read -r name kind module sum <<<"$entry"
  started=$SECONDS
  # A copy: the sources may be read-only, and builds write into the tree they build.
  rm -rf "$work/src/$name" "$work/build/$name"
  mkdir -p "$work/src"
  cp -r "$sources/$name" "$work/src/$name"
  chmod -R u+w "$work/src/$name"
  log=$work/$name.log
  if [ "$kind" = cmake ]; then
    if ! { VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH cmake -S "$work/src/$name" -B "$work/build/$name" \
             -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
             -DPython3_EXECUTABLE="$python" -DPython3_FIND_VIRTUALENV=ONLY \
             -DCMAKE_PROJECT_INCLUDE="$repo/cmake/ros-wheels.cmake" \
           && VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH cmake --build "$work/build/$name" -j "$(nproc)" \
           && cmake --install "$work/build/$name"; } >"$log" 2>&1; then
      tail -30 "$log" >&2
      echo "install-ros-src: building $name failed; the whole log is $log" >&2
      exit 1
    fi
  else
    if ! "$python" -m pip install --no-deps --no-build-isolation "$work/src/$name" >"$log" 2>&1; then
      tail -30 "$log" >&2
      echo "install-ros-src: installing $name failed; the whole log is $log" >&2
      exit 1
    fi
  fi
  echo "$sum" >"$stamps/$name"
  say "$name installed ($((SECONDS - started)) s)"
done
(cd / && "$python" -c "import tf2_ros, tf2_msgs.msg, vision_msgs.msg, launch.action, launch_ros, ros2cli") \
  || { echo "install-ros-src: the packages were built but do not import" >&2; exit 1; }
say "ROS 2 packages ready: tf2_ros, tf2_msgs, vision_msgs, ros2 launch"
