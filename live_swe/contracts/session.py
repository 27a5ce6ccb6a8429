"""The contract of one run: loaded and checked before the session exists, recorded in its log at the
start, and read back from the log on resume (the log is kernel-owned; the repository may have
changed since)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from live_swe import events as ev
from live_swe.config import home
from live_swe.contracts.engine import ContractEngine
from live_swe.contracts.load import load_for_run
from live_swe.contracts.model import Contract
from live_swe.contracts.preconditions import check_preconditions, run_fields


@dataclass(frozen=True)
class RunContract:
    contract: Contract
    sources: tuple[str, ...]
    graded: tuple[str, ...] = ()


def _show(text: str) -> None:
    print(text, file=sys.stderr)


def run_contract(request: Any) -> RunContract:
    """``request``'s merged contract; raises a one-line error for a bad file or a failed precondition."""
    graded = request.graded_test_files
    contract, sources = load_for_run(repo=request.repo, files=request.contract_files, bench=graded is not None,
                                     home=home(), show=_show)
    fields = run_fields(contract, repo=request.repo, env=request.env, model=request.model, network=request.network,
                        sandbox=request.sandbox, limits=request.limits)
    check_preconditions(contract, fields)
    return RunContract(contract, tuple(sources), tuple(graded or ()))


def recorded_contract(events: Iterable[ev.Event]) -> RunContract | None:
    """The contract the session's run started with (its ``loaded`` event), for resume."""
    for event in events:
        if isinstance(event, ev.ContractEvent) and event.kind == "loaded" and "contract" in event.extra:
            return RunContract(Contract.model_validate(event.extra["contract"]), tuple(event.extra.get("sources", ())),
                               tuple(event.extra.get("graded", ())))
    return None


def contract_engine(run: RunContract, *, env, base: str, patch_fn, emit) -> ContractEngine:
    engine = ContractEngine(run.contract, env=env, base_commit=base, patch_fn=patch_fn, emit=emit,
                            graded_test_files=run.graded)
    emit(ev.ContractEvent.of("loaded", name=run.contract.name, sources=list(run.sources), rules=len(run.contract.rules()),
                        graded=list(run.graded), contract=run.contract.model_dump(mode="json")))
    return engine
