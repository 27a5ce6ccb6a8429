"""Session views: the summary ``sessions show`` prints, the mini-swe-agent trajectory export, and
a redacted copy of a session folder to share."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from live_swe import __version__
from live_swe.contracts.report import contract_report
from live_swe.errors import UserError
from live_swe.infra import files
from live_swe.infra.redact import redactor
from live_swe.session.store import RunStatus, Session, SessionError
from live_swe.session.view import SessionView

SESSION_FILES = ("meta.json", "events.jsonl", "patch.diff")

# Our statuses in mini-swe-agent's exit_status vocabulary.
_MINI_STATUS = {
    RunStatus.SUBMITTED: "Submitted",
    RunStatus.LIMITS_EXCEEDED: "LimitsExceeded",
    RunStatus.FORMAT_ERROR: "RepeatedFormatError",
    RunStatus.INTERRUPTED: "KeyboardInterrupt",
    RunStatus.ERROR: "Error",
    RunStatus.RUNNING: "",
}


def summary(session: Session, view: SessionView | None = None) -> dict[str, Any]:
    """What the session's own files say; ``sessions show`` adds the grade and the scaffold's
    evolution, which layers above this one read."""
    meta = session.meta
    view = view or SessionView.read(session)
    data = {
        "id": meta.id,
        "status": meta.status,
        "task": meta.task,
        "model": meta.model,
        "env": meta.env,
        "image": meta.image,
        "repo": meta.repo,
        "scaffold_ref": meta.scaffold_ref,
        "steps": view.steps,
        "cost": view.cost,
        "elapsed": view.elapsed,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "exit_message": meta.exit_message,
        "patch": session.patch(),
        "log_problems": list(view.problems),
    }
    data["contract"] = contract_report(view.contract_events, data["steps"])
    return data


def mini_trajectory(session: Session) -> dict[str, Any]:
    view = SessionView.read(session)
    meta = session.meta
    return {
        "info": {
            "model_stats": {
                "instance_cost": view.cost,
                "api_calls": view.replies,
            },
            "config": {"model": {"model_name": meta.model}, "agent_type": "live_swe"},
            "live_swe_version": __version__,
            "exit_status": _MINI_STATUS.get(meta.status, meta.status),
            "submission": session.patch(),
        },
        "messages": view.messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }


def redacted_copy(session: Session, out: Path) -> Path:
    """``out/<id>/``: the session's ``meta.json``, ``events.jsonl``, ``patch.diff`` and scaffold files,
    each redacted of the secrets this process holds. The scaffold's git history is left out (its
    objects are compressed, so a secret in them could not be masked); links are not copied."""
    target = Path(out) / session.id
    if os.path.lexists(target):
        raise UserError(f"{target} already exists; remove it or give another --out")
    target.mkdir(parents=True)
    redact = redactor()
    for name in SESSION_FILES:
        try:
            text = files.read_text(session.dir / name)
        except FileNotFoundError:
            continue
        except files.DamagedFile as exc:
            raise SessionError(str(exc)) from None
        (target / name).write_text(redact(text))
    _copy_tree(session.scaffold_dir, target / "scaffold", redact)
    return target


def _copy_tree(source: Path, target: Path, redact) -> None:
    if not source.is_dir() or source.is_symlink():
        return
    for folder, _dirs, names in os.walk(source):  # os.walk does not descend into linked folders
        here = target / Path(folder).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in names:
            path = Path(folder) / name
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            data = path.read_bytes()
            # latin-1 maps every byte to one character, so binary files round-trip; secrets are text
            (here / name).write_bytes(redact(data.decode("latin-1")).encode("latin-1"))
            os.chmod(here / name, info.st_mode & 0o755)
