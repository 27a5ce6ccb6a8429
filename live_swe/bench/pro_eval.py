"""SWE-bench Pro evaluation: each instance's own run script and parser, following the Pro protocol.

The official Pro repository (scaleapi/SWE-bench_Pro-os) lays out ``run_scripts/<instance_id>/``
with ``run_script.sh`` and ``parser.py``. For each prediction we start the instance's image, put
a workspace at ``/workspace`` (patch, test patch, the two scripts, an entry script), and run:

    cd /app; git reset --hard BASE; git checkout BASE
    git apply -v /workspace/patch.diff
    <the last line of before_repo_set_cmd>
    apply the row's test patch unless it is already in place
    bash /workspace/run_script.sh <selected_test_files_to_run, comma-joined> > stdout.log 2> stderr.log
    python /workspace/parser.py stdout.log stderr.log output.json

An instance is resolved iff every ``fail_to_pass`` and ``pass_to_pass`` test is PASSED in
``output.json``. Files go in and out through the Docker API (no bind mounts), so a remote engine works.
"""

from __future__ import annotations

import io
import json
import shlex
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from live_swe.bench.suites import Instance, decode_list
from live_swe.errors import UserError

RUN_SCRIPTS = "run_scripts"
WORKSPACE = "/workspace"


@dataclass
class ProOutcome:
    instance_id: str
    resolved: bool
    status: str  # resolved | unresolved | empty_patch | error
    detail: str = ""
    log_dir: str = ""


def scripts_dir_for(instance_id: str, pro_repo: Path) -> Path:
    """``run_scripts/<instance_id>/`` of a Pro checkout (``pro_repo`` may also be run_scripts itself)."""
    for root in (pro_repo / RUN_SCRIPTS, pro_repo):
        candidate = root / instance_id
        if (candidate / "run_script.sh").is_file() and (candidate / "parser.py").is_file():
            return candidate
    raise UserError(
        f"{pro_repo}: no run_scripts/{instance_id}/run_script.sh and parser.py; pass --pro-repo PATH, a "
        "checkout of the official SWE-bench Pro repository (git clone https://github.com/scaleapi/SWE-bench_Pro-os)"
    )


def entry_script(instance: Instance, selected: list[str]) -> str:
    row = instance.row
    base = shlex.quote(instance.base_commit)
    before = (row.get("before_repo_set_cmd") or "").strip().split("\n")[-1]
    lines = [
        "#!/bin/bash",
        f"cd {shlex.quote(instance.repo_dir)}",
        f"git reset --hard {base}",
        f"git checkout {base}",
        f"git apply -v {WORKSPACE}/patch.diff",
        before,
    ]
    if instance.test_patch.strip():
        # Official rows bring their tests in with before_repo_set_cmd; ours carry a test patch.
        # Apply it only where it is not in place already, so both kinds run unchanged.
        tp = f"{WORKSPACE}/test_patch.diff"
        lines.append(
            f"if git apply --check {tp} 2>/dev/null; then git apply -v {tp}; "
            f"elif git apply --check --reverse {tp} 2>/dev/null; then echo 'test patch already in place'; "
            f"else echo 'test patch does not apply' >&2; fi"
        )
    files = shlex.quote(",".join(selected))
    lines += [
        f"bash {WORKSPACE}/run_script.sh {files} > {WORKSPACE}/stdout.log 2> {WORKSPACE}/stderr.log",
        # Pro images ship `python`; plain Debian bases only `python3`.
        'PY="$(command -v python || command -v python3)"',
        f'"$PY" {WORKSPACE}/parser.py {WORKSPACE}/stdout.log {WORKSPACE}/stderr.log {WORKSPACE}/output.json',
        "",
    ]
    return "\n".join(lines)


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"workspace/{name}")
            info.size = len(data)
            info.mode = 0o755 if name.endswith(".sh") else 0o644
            info.mtime = int(time.time())
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _read_from(container, path: str) -> str | None:
    from docker.errors import NotFound

    try:
        stream, _ = container.get_archive(path)
    except NotFound:
        return None
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        member = archive.next()
        handle = archive.extractfile(member) if member else None
        return handle.read().decode("utf-8", errors="replace") if handle else None


def grade(instance: Instance, output: dict) -> tuple[bool, str]:
    """Resolved iff all fail_to_pass and pass_to_pass tests passed; the detail names what did not."""
    passed = {t.get("name") for t in output.get("tests", []) if t.get("status") == "PASSED"}
    wanted = set(instance.fail_to_pass) | set(instance.pass_to_pass)
    missing = sorted(wanted - passed)
    if not missing:
        return True, f"{len(wanted)} tests passed"
    shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
    return False, f"{len(missing)} of {len(wanted)} required tests did not pass: {shown}"


def evaluate_pro_instance(client, instance: Instance, patch: str, *, pro_repo: Path, log_dir: Path,
                          timeout: int = 1800, run_id: str = "eval") -> ProOutcome:
    """Run one Pro instance end to end; never raises for a failing patch, only records it."""
    log_dir.mkdir(parents=True, exist_ok=True)
    for name in ("entryscript.log", "stdout.log", "stderr.log", "output.json"):  # an earlier run's, never graded again
        (log_dir / name).unlink(missing_ok=True)
    if not (patch or "").strip():
        return ProOutcome(instance.instance_id, False, "empty_patch", "the prediction has no patch", str(log_dir))
    scripts = scripts_dir_for(instance.instance_id, pro_repo)
    selected = decode_list(instance.row.get("selected_test_files_to_run"), where=instance.instance_id)
    files = {
        "patch.diff": patch,
        "test_patch.diff": instance.test_patch,
        "run_script.sh": (scripts / "run_script.sh").read_text(),
        "parser.py": (scripts / "parser.py").read_text(),
        "entryscript.sh": entry_script(instance, selected),
    }
    (log_dir / "entryscript.sh").write_text(files["entryscript.sh"])
    (log_dir / "patch.diff").write_text(patch)
    container = None
    try:
        container = client.containers.create(
            instance.image, entrypoint=["tail", "-f", "/dev/null"], detach=True,
            name=f"live-swe-pro.{instance.instance_id.lower()}.{run_id}"[:200],
            labels={"live-swe.eval": run_id},
        )
        container.start()
        container.put_archive("/", _tar(files))
        result = container.exec_run(
            ["timeout", str(timeout), "bash", f"{WORKSPACE}/entryscript.sh"], demux=False
        )
        (log_dir / "entryscript.log").write_bytes(result.output or b"")
        for name in ("stdout.log", "stderr.log", "output.json"):
            text = _read_from(container, f"{WORKSPACE}/{name}")
            if text is not None:
                (log_dir / name).write_text(text)
        if result.exit_code == 124:
            return ProOutcome(instance.instance_id, False, "error", f"timed out after {timeout} s", str(log_dir))
        output_text = (log_dir / "output.json").read_text() if (log_dir / "output.json").exists() else None
        if output_text is None:
            return ProOutcome(instance.instance_id, False, "error",
                              f"the parser wrote no output.json (see {log_dir}/entryscript.log)", str(log_dir))
        resolved, detail = grade(instance, json.loads(output_text))
        return ProOutcome(instance.instance_id, resolved, "resolved" if resolved else "unresolved", detail, str(log_dir))
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - one instance's infrastructure failure is recorded, not fatal
        return ProOutcome(instance.instance_id, False, "error", f"{exc.__class__.__name__}: {exc}", str(log_dir))
    finally:
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 - best effort
                pass
