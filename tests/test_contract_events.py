"""The contract engine and the grade write typed events whose records keep the log's format, and
their readers (the contract report, the progress line, resume's recorded contract, the saved grade)
read an older log's plain records the same as the typed events."""

from __future__ import annotations

import json

from live_swe import events as ev
from live_swe.contracts.load import BUILTIN, read
from live_swe.contracts.report import contract_report
from live_swe.contracts.session import RunContract, contract_engine, recorded_contract
from live_swe.environments.local import LocalEnvironment
from live_swe.grading.log import grade_event, saved_grade
from live_swe.wording import contract_progress_line


def event_line(record):
    event = ev.parse(record)
    return contract_progress_line(event) if isinstance(event, ev.ContractEvent) else None


def _on_disk(events: list[ev.Event]) -> list[dict]:
    return [json.loads(json.dumps(e.record())) for e in events]


def test_a_blocked_command_is_a_typed_event_with_the_logs_record(git_repo):
    emitted: list = []
    run = RunContract(read(BUILTIN), ("builtin",))
    engine = contract_engine(run, env=LocalEnvironment(git_repo, sandbox="none"), base="HEAD", patch_fn=None,
                             emit=emitted.append)
    verdict = engine.before("git push origin HEAD:main", step=1, cost=0.0)
    assert verdict.refusal and "no-git-push" in verdict.refusal
    assert all(isinstance(e, ev.ContractEvent) for e in emitted)
    loaded, blocked = _on_disk(emitted)
    assert list(blocked) == ["t", "ts", "kind", "step", "rule", "severity", "message", "fields"]
    assert (blocked["t"], blocked["kind"], blocked["step"], blocked["rule"], blocked["severity"]) == \
        ("contract", "blocked", 1, "no-git-push", "governance")
    assert {"name", "sources", "rules", "graded", "contract"} <= set(loaded) and loaded["kind"] == "loaded"

    # what resume and `sessions show` read back from the log
    records = _on_disk(emitted)
    assert recorded_contract(ev.parse_all(records)).contract == run.contract
    report = contract_report(ev.parse_all(records), steps=1)
    assert report["hard_blocked"] == 1 and report["hard_compliance"] == 1.0
    assert report["violations"] == [
        "step 1: no-git-push (blocked): the agent never pushes; the person or the GitHub integration publishes the work"]
    assert contract_report(emitted, steps=1) == report
    assert event_line(records[1]) == event_line(emitted[1]) == "contract " + report["violations"][0]
    assert event_line(records[0]) is None and event_line({"t": "step", "step": 1}) is None


def test_an_older_logs_soft_rule_record_reads_as_before():
    records = [
        {"t": "contract", "kind": "loaded", "name": "builtin", "sources": ["builtin"], "rules": 3},
        {"t": "contract", "kind": "detected", "step": 2, "rule": "test-after-last-edit", "severity": "soft"},
        {"t": "contract", "kind": "recovered", "step": 4, "rule": "test-after-last-edit", "severity": "soft",
         "within": 2, "in_window": True},
    ]
    report = contract_report(ev.parse_all(records), steps=4)
    assert (report["contract"], report["soft_detected"], report["recovered_within"]) == ("builtin", 1, [2])
    assert report["drift"] == 0.5 and report["soft_compliance"] == 1.0
    assert event_line(records[2]) == "contract step 4: test-after-last-edit recovered within 2 steps"


def test_a_grade_counts_only_while_no_step_came_after_it():
    grade = {"metrics": {}, "findings": []}
    record = json.loads(json.dumps(grade_event(grade).record()))
    assert list(record) == ["t", "ts", "grade"] and record["t"] == "grade"
    step = {"t": "step", "step": 3, "command": "ls", "returncode": 0}
    assert saved_grade([step, record]) == grade
    assert saved_grade([record, step]) is None
    assert saved_grade([ev.parse(step), ev.parse(record)]) == grade
