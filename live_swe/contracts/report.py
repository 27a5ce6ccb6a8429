"""A session's contract record, read from its events: what was blocked, detected, recovered, and
the figures of the Agent Behavioral Contracts paper as we compute them:

- hard compliance: hard violations contained (blocked, reverted, masked) / hard violations (1 when none);
- soft compliance: soft violations recovered within the window k / soft violations (1 when none);
- drift: the share of steps with a soft violation open;
- reliability Θ: hard compliance × soft compliance × (1 − drift).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from live_swe import events as ev
from live_swe.wording import CONTAINED, HARD_KINDS, VIOLATION_KINDS, contract_line


def contract_report(events: Iterable[ev.Event], steps: int) -> dict[str, Any] | None:
    mine = [e for e in events if isinstance(e, ev.ContractEvent)]
    if not mine:
        return None
    hard = [e for e in mine if e.kind in HARD_KINDS]
    detected = [e for e in mine if e.kind == "detected"]
    recovered = [e for e in mine if e.kind == "recovered"]
    persistent = [e for e in mine if e.kind == "persistent"]
    in_window = [e for e in recovered if e.extra.get("in_window")]
    blocked = sum(e.kind in CONTAINED for e in hard)
    open_steps = _open_steps(mine, steps)
    hard_compliance = blocked / len(hard) if hard else 1.0
    soft_compliance = len(in_window) / len(detected) if detected else 1.0
    drift = len(open_steps) / steps if steps else 0.0
    loaded = next((e.extra for e in mine if e.kind == "loaded"), {})
    return {
        "contract": loaded.get("name", ""),
        "sources": loaded.get("sources", []),
        "hard_blocked": blocked,
        "hard_unblocked": len(hard) - blocked,
        "soft_detected": len(detected),
        "soft_recovered": len(recovered),
        "recovered_within": [e.extra.get("within", 0) for e in recovered],
        "soft_persistent": len(persistent),
        "hard_compliance": round(hard_compliance, 4),
        "soft_compliance": round(soft_compliance, 4),
        "drift": round(drift, 4),
        "reliability": round(hard_compliance * soft_compliance * (1 - drift), 4),
        "violations": [contract_line(e) for e in mine if e.kind in VIOLATION_KINDS],
    }


def _open_steps(events: list[ev.ContractEvent], steps: int) -> set[int]:
    open_since: dict[str | None, int] = {}
    covered: set[int] = set()
    for event in events:
        rule, kind, step = event.rule, event.kind, event.step or 0
        if kind == "detected":
            open_since.setdefault(rule, step)
        elif kind in ("recovered", "persistent") and rule in open_since:
            covered.update(range(open_since.pop(rule), step + (1 if kind == "persistent" else 0)))
    for since in open_since.values():
        covered.update(range(since, steps + 1))
    return covered


def contract_lines(report: dict[str, Any]) -> list[str]:
    """The contract part of `sessions show`."""
    within = report["recovered_within"]
    lines = [
        f"{'contract':>13}: {report['contract']} — hard: {report['hard_blocked']} blocked, "
        f"{report['hard_unblocked']} not contained; soft: {report['soft_detected']} detected, "
        f"{report['soft_recovered']} recovered" + (f" (within {', '.join(map(str, within))} steps)" if within else "")
        + f", {report['soft_persistent']} persistent",
        f"{'':>13}  compliance hard {report['hard_compliance']:.2f} soft {report['soft_compliance']:.2f}, "
        f"drift {report['drift']:.2f}, reliability Θ {report['reliability']:.2f}",
    ]
    lines += [f"{'':>13}  {line}" for line in report["violations"]]
    return lines
