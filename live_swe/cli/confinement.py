"""``--sandbox`` and ``--network``: checked before a session exists, and said on every run."""

from __future__ import annotations

import sys

from live_swe.cli.common import fail

UNCONFINED_WARNING = ("live-swe: warning: --sandbox none: the agent's commands, tools and hooks run unconfined "
                      "on this machine, with your permissions (files, processes, network, credentials)")


def check_confinement(env: str, sandbox: str) -> None:
    """Refuse what cannot run (one line naming the fixes); warn when the user turned the sandbox off."""
    from live_swe.environments import sandbox as bubblewrap

    if sandbox not in bubblewrap.SANDBOX_MODES:
        fail(f"unknown --sandbox {sandbox!r}; use bubblewrap (the default) or none")
    if env != "local":
        return
    if sandbox == "none":
        print(UNCONFINED_WARNING, file=sys.stderr)
        return
    reason = bubblewrap.unavailable_reason()
    if reason:
        fail(bubblewrap.refusal(reason))
