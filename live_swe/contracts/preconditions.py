"""Preconditions: checked before a session exists; the first that fails is one line for the person."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from live_swe.contracts.load import ContractError
from live_swe.contracts.model import Contract
from live_swe.contracts.operators import holds
from live_swe.infra.git import Git, GitFailed


def run_fields(contract: Contract, *, repo: Path | None, env: str, model: str, network: bool, sandbox: str,
               limits: Any) -> dict[str, Any]:
    """The fields the preconditions read; the repository is looked at only when one asks."""
    fields: dict[str, Any] = {"env": env, "model": model, "network": network, "sandbox": sandbox,
                              "step_limit": limits.step_limit, "cost_limit": limits.cost_limit,
                              "wall_time_limit": limits.wall_time_limit}
    wanted = {p.check.field for p in contract.preconditions}
    if wanted & {"repo_is_git", "repo_dirty_files"} and repo is not None:
        try:
            status = Git(repo).run("status", "--porcelain", "-z", "--untracked-files=all")
            fields["repo_is_git"] = True
            fields["repo_dirty_files"] = sorted(entry[3:] for entry in status.split("\0") if len(entry) > 3)
        except (GitFailed, OSError):
            fields["repo_is_git"], fields["repo_dirty_files"] = False, []
    return fields


def check_preconditions(contract: Contract, fields: dict[str, Any]) -> None:
    for pre in contract.preconditions:
        if not holds(pre.check, fields):
            shown = fields.get(pre.check.field)
            wanted = f"it {pre.check.op.replace('_', ' ')}" if pre.check.value is None else \
                f"{pre.check.op.replace('_', ' ')} {pre.check.value!r}"
            raise ContractError(f"contract precondition {pre.id} failed: {pre.message or pre.check.field} "
                                f"({pre.check.field} is {shown!r}; the contract wants {wanted}); nothing was started")
