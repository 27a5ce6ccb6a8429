"""The analysers against the hand-labelled set (``evals/grading/labelled.yaml``): every trajectory
run through the real loop on its local-suite repository, then compared with its labels.

The thresholds sit a little under what the set measures (``python benchmarks/grading_agreement.py``:
detection 0.94, localisation 0.91, 1.00 / 0.97 on the errors the analysers are built to see,
no false alarm), so a regression fails here; for scale, Agent GPA's judges caught 95 % of the
human-labelled errors on TRAIL/GAIA and localised 86 %.
"""

from __future__ import annotations

import pytest

from live_swe.bench.labelled import FAMILIES, agreement, load_set, run_set
from live_swe.grading.analysers import analyse
from live_swe.grading.judge import judge_messages
from live_swe.grading.log import load_trajectory
from live_swe.session.store import SessionStore

LOCAL_JUDGE_CHARS = 12000  # what benchmarks/judge_agreement.py gives the embedded model


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("labelled")
    items = load_set()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LIVE_SWE_HOME", str(workdir / "home"))
        sessions = run_set(items, workdir, workers=2)
        store = SessionStore(workdir / "sessions")
        trajectories = {item.id: load_trajectory(store.open(sessions[item.id])) for item in items}
    return items, trajectories


def test_the_set_is_large_enough_and_ran_as_written(labelled):
    items, trajectories = labelled
    assert len(items) >= 30
    labels = [label for item in items for label in item.labels]
    for kind in FAMILIES:
        assert sum(label.kind == kind for label in labels) >= 6, kind
    assert sum(not item.labels for item in items) >= 8  # clean trajectories, for false alarms
    assert sum(item.split == "heldout" for item in items) >= 10
    for item in items:
        trajectory = trajectories[item.id]
        # one step per scripted reply, all of them run: the labels name real steps
        assert trajectory.status == "submitted", item.id
        assert [s.id for s in trajectory.steps] == list(range(1, len(item.replies) + 1)), item.id
        for label in item.labels:
            assert set(label.steps) <= trajectory.step_ids, item.id


def test_the_analysers_agree_with_the_labels(labelled):
    items, trajectories = labelled
    result = agreement(items, {item_id: analyse(t) for item_id, t in trajectories.items()}).to_json()
    assert result["detection"] >= 0.9 and result["localisation"] >= 0.85, result["misses"]
    assert result["checkable_detection"] >= 0.95 and result["checkable_localisation"] >= 0.9, result["misses"]
    assert result["precision"] >= 0.95, result["alarms"]
    assert result["clean_flagged"] == 0, result["alarms"]
    for kind, row in result["by_kind"].items():
        assert row["detected"] >= row["labels"] - 2, (kind, result["misses"])


def test_every_labelled_step_is_shown_to_a_judge_even_on_the_local_budget(labelled):
    items, trajectories = labelled
    for item in items:
        trajectory = trajectories[item.id]
        findings = analyse(trajectory)
        for label in item.labels:
            [_, user] = judge_messages("execution_efficiency", trajectory, findings, LOCAL_JUDGE_CHARS)
            for step in label.steps:
                assert f"[step {step}]" in user["content"], (item.id, step)
