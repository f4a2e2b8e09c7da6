"""The checks every change passes besides behaviour: lint, types, and layers that import one way."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ROOT / "scripts" / "import_layers.py"
RESULTS_INDEX = ROOT / "scripts" / "results_index.py"


def run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def tool(name: str) -> str:
    """The tool installed beside this interpreter (the venv's), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name) or pytest.fail(f"{name} is not installed")


def test_ruff_finds_nothing():
    result = run(tool("ruff"), "check", "src", "test", "launch", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_typed_core_modules_type_check():
    result = run(tool("mypy"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_results_index_lists_every_committed_result_and_each_is_quoted():
    result = run(sys.executable, str(RESULTS_INDEX), "--check")
    assert result.returncode == 0, result.stderr
    index = (ROOT / "bench" / "results" / "INDEX.md").read_text()
    assert "| nothing |" not in index, "a committed result nothing quotes: quote it or prune it (--prune)"


def test_imports_run_one_way_through_the_layers():
    result = run(sys.executable, str(LAYERS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "layer 0: core" in result.stdout and "core -> nothing in the package" in result.stdout


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"planner/__init__.py": "", "planner/core/__init__.py": "", "planner/ros/__init__.py": "",
                       "planner/adapters/__init__.py": "", "planner/sim/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_an_import_back_up_the_layers_fails_and_names_the_line(tmp_path):
    src = package(tmp_path, {"planner/core/loop.py": "def run():\n    from planner.ros.node import spin\n",
                             "planner/ros/node.py": "def spin(): ...\n"})
    result = run(sys.executable, str(LAYERS), "--src", str(src))
    assert result.returncode == 1
    assert "back edge: planner.core.loop (core) imports planner.ros.node (ros | msg | srv | action) (line 2)" in result.stdout


def test_the_simulator_and_the_adapters_stay_apart(tmp_path):
    src = package(tmp_path, {"planner/sim/robot.py": "import planner.adapters.llm\n", "planner/adapters/llm.py": ""})
    result = run(sys.executable, str(LAYERS), "--src", str(src))
    assert result.returncode == 1 and "sideways: planner.sim.robot imports planner.adapters.llm" in result.stdout


def test_a_cycle_inside_a_layer_fails(tmp_path):
    src = package(tmp_path, {"planner/core/a.py": "from planner.core import b\n",
                             "planner/core/b.py": "def later():\n    from planner.core import a\n"})
    result = run(sys.executable, str(LAYERS), "--src", str(src))
    assert result.returncode == 1 and "cycle: planner.core." in result.stdout


def test_a_package_outside_every_layer_is_named(tmp_path):
    src = package(tmp_path, {"planner/extras/__init__.py": ""})
    result = run(sys.executable, str(LAYERS), "--src", str(src))
    assert result.returncode == 1 and "planner.extras is in no layer" in result.stdout
