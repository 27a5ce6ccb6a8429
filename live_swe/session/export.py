"""Session views: the summary ``sessions show`` prints and the mini-swe-agent trajectory export."""

from __future__ import annotations

from typing import Any

from live_swe import __version__
from live_swe.session.store import Session

# Our statuses in mini-swe-agent's exit_status vocabulary.
_MINI_STATUS = {
    "submitted": "Submitted",
    "limits_exceeded": "LimitsExceeded",
    "format_error": "RepeatedFormatError",
    "interrupted": "KeyboardInterrupt",
    "error": "Error",
    "running": "",
}


def summary(session: Session) -> dict[str, Any]:
    meta = session.meta
    events, problems = session.events()
    steps = [e for e in events if e.get("t") == "step"]
    data = {
        "id": meta.id,
        "status": meta.status,
        "task": meta.task,
        "model": meta.model,
        "env": meta.env,
        "image": meta.image,
        "repo": meta.repo,
        "scaffold_ref": meta.scaffold_ref,
        "steps": max(meta.steps, max((e.get("step", 0) for e in steps), default=0)),
        "cost": max(meta.cost, steps[-1].get("cost", 0.0) if steps else 0.0),
        "elapsed": meta.elapsed,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "exit_message": meta.exit_message,
        "patch": session.patch(),
        "log_problems": problems,
    }
    try:
        from live_swe.evolution.history import evolution_summary
    except ImportError:
        return data
    data.update(evolution_summary(session, events))
    return data


def mini_trajectory(session: Session) -> dict[str, Any]:
    messages = [e["message"] for e in session.iter_events("message")]
    meta = session.meta
    return {
        "info": {
            "model_stats": {
                "instance_cost": meta.cost,
                "api_calls": sum(1 for m in messages if m.get("role") == "assistant"),
            },
            "config": {"model": {"model_name": meta.model}, "agent_type": "live_swe"},
            "live_swe_version": __version__,
            "exit_status": _MINI_STATUS.get(meta.status, meta.status),
            "submission": session.patch(),
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
