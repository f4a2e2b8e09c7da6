"""Installing the package the way Python users expect: a plain `pip install .` in a fresh venv
builds the ROS 2 interfaces from PyPI's ROS 2 wheels and installs the command line; what the
default stack needs beyond that is named, with the one command that installs it, before any node
starts."""

import os
import subprocess
import sys
import venv
from functools import partial

import pytest

from conftest import REPO, write_config
from planner.config import load_config
from planner.wiring import install_hint, missing_packages


def test_the_packages_a_config_needs_are_named_with_the_command_that_installs_them(tmp_path, monkeypatch):
    import importlib.util

    absent = {"llama_cpp", "spacy"}
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name in absent else real_find_spec(name, *rest))
    embedded = load_config(write_config(tmp_path, llm={"provider": "embedded"}))
    assert [module for module, _, _ in missing_packages(embedded)] == ["llama_cpp", "spacy"]
    assert "pip install '.[embedded,language]'" in install_hint(missing_packages(embedded))
    served = load_config(write_config(tmp_path, llm={"provider": "openai", "base_url": "http://gpu-box:8000/v1"}))
    assert [module for module, _, _ in missing_packages(served)] == ["spacy"]


@pytest.mark.timeout(1500)
def test_a_plain_pip_install_builds_and_says_what_the_stack_still_needs(tmp_path):
    source = tmp_path / "planner"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        path = REPO / name.decode()
        if path.is_file():
            (source / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            (source / name.decode()).write_bytes(path.read_bytes())
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    # As on a fresh machine: nothing of this venv's or this test run's on the paths.
    plain = {"PATH": f"{environment / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
             **{name: value for name, value in os.environ.items() if name.startswith(("PIP_", "ROS_DOMAIN"))}}
    run = partial(subprocess.run, capture_output=True, text=True, env=plain, cwd=tmp_path)
    installed = run([python, "-m", "pip", "install", "-q", str(source)])
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    imported = run([python, "-c", "from planner.msg import PlanStep; from planner.action import Manipulate; "
                                  "from planner.api import Planner; import rclpy"])
    assert imported.returncode == 0, imported.stderr
    version = run([environment / "bin" / "planner", "--version"])
    assert version.returncode == 0 and version.stdout.startswith("planner ")
    demo = run([environment / "bin" / "planner", "demo"], timeout=120)
    assert demo.returncode == 2 and "pip install '.[embedded,explainer,language]'" in demo.stderr, demo.stderr
    assert sys.executable not in demo.stderr
