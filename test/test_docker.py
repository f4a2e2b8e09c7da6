"""What can be checked of docker/ on a machine without a container engine or ROS 2: the compose
file against Compose's own schema (Debian's docker-compose, which set-up installs) and its shape,
the stop signal and shared memory of the ROS services, what the build context leaves out, the files
the image and services use, the Dockerfile's apt names, and that the pip pins for a ROS install are
the ones the tests run with."""

import re
import subprocess
from pathlib import Path

import yaml

from conftest import REPO

DOCKER = REPO / "docker"
# The Jazzy binary packages the image installs (ros-jazzy-<name>); names as released for Jazzy
# (the robostack-jazzy channel, which rebuilds the releases, lists each under the same name).
JAZZY_PACKAGES = {"navigation2", "nav2-bringup", "nav2-simple-commander", "moveit", "moveit-py", "ros-gz",
                  "foxglove-bridge", "tf2-ros", "vision-msgs", "control-msgs"}


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            found[re.sub(r"\[.*\]", "", name).lower()] = version.strip()
    return found


def test_the_compose_file_has_an_image_and_a_command_for_every_service():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"llm", "models", "gazebo", "planner", "foxglove"}
    for name, service in services.items():
        assert service.get("image") and service.get("command"), name
    assert services["models"]["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert (DOCKER / ".." / services["models"]["build"]["dockerfile"]).resolve().is_file()
    for name in ("gazebo", "planner", "foxglove"):  # DDS discovery needs the host network
        assert services[name]["network_mode"] == "host", name
    assert set(compose["volumes"]) == {"models"}
    launch = " ".join(services["planner"]["command"])
    assert "bringup.launch.py" in launch and "llm_base_url:=" in launch
    # Files the services name inside the image exist in the repository (copied to /ws/src/planner).
    for text in (str(s["command"]) for s in services.values()):
        for path in re.findall(r"/ws/src/planner/([\w/.-]+)", text):
            assert (REPO / path).is_file(), path


def test_the_image_installs_jazzy_packages_and_uses_files_that_exist():
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert dockerfile.startswith("#") and "FROM ros:jazzy-ros-base" in dockerfile
    assert set(re.findall(r"ros-jazzy-([\w-]+)", dockerfile)) == JAZZY_PACKAGES
    for path in re.findall(r"/ws/src/planner/([\w/.-]+\.sh)", dockerfile):
        assert (REPO / path).is_file(), path
    for source in re.findall(r"^COPY (\S+) ", dockerfile, re.MULTILINE):
        assert (REPO / source).exists(), source


def test_a_ros_install_gets_the_versions_the_tests_run_with():
    stack, ros = pins(REPO / "requirements" / "stack.txt"), pins(REPO / "requirements" / "ros.txt")
    assert ros and all(stack.get(name) == version for name, version in ros.items()), \
        {name: (version, stack.get(name)) for name, version in ros.items() if stack.get(name) != version}
    assert "numpy" not in ros  # the ROS Python's own numpy stays


def compose_config(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["docker-compose", "-f", str(path), "config", "-q"], capture_output=True, text=True,
                          timeout=120, cwd=path.parent)


def test_compose_validates_the_compose_file_and_refuses_a_broken_one(tmp_path):
    checked = compose_config(DOCKER / "compose.yaml")
    assert checked.returncode == 0, checked.stderr
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    compose["services"]["planner"]["stop_signal"] = 2
    compose["services"]["foxglove"]["ipcc"] = "host"
    broken = tmp_path / "compose.yaml"
    broken.write_text(yaml.safe_dump(compose))
    checked = compose_config(broken)
    assert checked.returncode != 0
    assert "Unsupported config option for services.foxglove: 'ipcc'" in checked.stderr
    assert "services.planner.stop_signal contains an invalid type" in checked.stderr


def test_every_ros_service_stops_on_sigint_and_shares_memory_with_the_others():
    """ros2 launch stops its nodes (and the robot's goals) on SIGINT only; with the host network,
    Fast DDS talks through shared memory, which a service without the host's IPC cannot reach."""
    services = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    for name in ("gazebo", "planner", "foxglove"):
        assert services[name].get("ipc") == "host" and services[name].get("stop_signal") == "SIGINT", name
    assert re.search(r"^STOPSIGNAL SIGINT$", (DOCKER / "Dockerfile").read_text(), re.MULTILINE)


def test_the_build_context_leaves_out_environments_builds_and_history():
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".venv", "build", "install", "log", ".git"} <= ignored


def test_the_package_asks_for_the_versions_the_tests_run_with():
    """pyproject.toml's requirements (build, run, extras) and requirements/stack.txt's pins are
    written twice; a version bumped in one alone would build or run what no test ran."""
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    wanted = [*project["build-system"]["requires"], *project["project"]["dependencies"],
              *(r for extra in project["project"].get("optional-dependencies", {}).values() for r in extra)]
    stack = pins(REPO / "requirements" / "stack.txt")
    unmet = {}
    for text in wanted:
        requirement = Requirement(text)
        name = requirement.name.lower().replace("_", "-")
        if name in stack and not requirement.specifier.contains(stack[name], prereleases=True):
            unmet[name] = (str(requirement.specifier), stack[name])
    assert not unmet, unmet
