"""Behavioural contracts end to end: files, sources and merging, preconditions, the scaffold's
add-only rules, the hook gate, the session report, resume and bench mode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from conftest import SUBMIT, bash_reply, make_git_repo, write_script
from test_bench_batch import _row, make_suite, suite_images  # noqa: F401 - suite_images is a fixture
from test_evolution_support import events_of, observation, run_script, write_file_command

from live_swe.contracts.load import BUILTIN, loosened, merge, parse, read
from live_swe.resources import resource_path

CLI = [sys.executable, "-m", "live_swe.cli.main"]
FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py")


def cli(*args, timeout=180):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def contract_events(session_id, kind=None):
    return [e for e in events_of(session_id, "contract") if kind is None or e["kind"] == kind]


def sessions_made(home):
    folder = home / "sessions"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_bad_contract_file_is_one_line_and_starts_nothing(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    cases = {
        "unknown key": ("name: x\nhard:\n  - id: a\n    check: {field: diff_lines, op: lt, value: 5}\n    colour: red\n",
                        "hard.0.colour: Extra inputs are not permitted"),
        "unknown field": ("hard:\n  - id: a\n    check: {field: lines_of_diff, op: lt, value: 5}\n",
                          "unknown field 'lines_of_diff'"),
        "bad regex": ("hard:\n  - id: a\n    check: {field: command, op: matches, value: '('}\n",
                      "is not a regular expression"),
        "late governance": ("governance:\n  - id: a\n    check: {field: files_changed, op: empty}\n",
                            "known only after the command runs; put it under hard:"),
        "not yaml": ("hard: [\n", "not valid YAML"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.yaml"
        path.write_text(text)
        out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--contract", str(path))
        assert out.returncode == 2, (name, out.stderr)
        assert expected in out.stderr and str(path) in out.stderr, (name, out.stderr)
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert sessions_made(live_swe_home) == []


def test_a_failed_precondition_stops_before_a_session_exists(git_repo, tmp_path, live_swe_home):
    (git_repo / "notes.txt").write_text("uncommitted work\n")
    contract = tmp_path / "clean.yaml"
    contract.write_text(yaml.safe_dump({"name": "clean", "preconditions": [
        {"id": "clean-tree", "check": {"field": "repo_dirty_files", "op": "empty"},
         "message": "commit or stash your changes first"}]}))
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--contract", str(contract),
              "--allow-dirty")  # past the built-in refusal of a dirty tree: the contract's precondition decides
    assert out.returncode == 2
    assert out.stderr.strip() == ("live-swe: error: contract precondition clean-tree failed: commit or stash your "
                                  "changes first (repo_dirty_files is ['notes.txt']; the contract wants it empty); "
                                  "nothing was started")
    assert sessions_made(live_swe_home) == []
    (git_repo / "notes.txt").unlink()
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--contract", str(contract),
              "--json")
    assert out.returncode == 0, out.stderr


def test_user_repository_and_cli_contracts_merge_and_the_repository_one_is_shown_once(tmp_path, live_swe_home):
    repo = make_git_repo(tmp_path / "repo", {
        "calc.py": "def add(a, b):\n    return a - b\n",
        ".live-swe/contract.yaml": "name: repo\ngovernance:\n  - id: no-curl\n    check: {field: command, op: not_matches, "
                                   "value: '\\bcurl\\b'}\n    message: this project forbids curl\n",
    })
    (live_swe_home / "contracts").mkdir()
    (live_swe_home / "contracts" / "mine.yaml").write_text(
        "name: mine\ngovernance:\n  - id: no-wget\n    check: {field: command, op: not_matches, value: '\\bwget\\b'}\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("name: extra\ngovernance:\n  - id: no-sudo\n    check: {field: command, op: not_matches, value: '^sudo'}\n")
    script = write_script(tmp_path / "s.yaml", [bash_reply("curl -s http://127.0.0.1:9"), bash_reply("wget -q x"),
                                                 bash_reply("sudo true"), bash_reply("git push"), SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json", "--contract", str(extra))
    assert out.returncode == 0, out.stderr
    assert "this repository adds a contract" in out.stderr and "this project forbids curl" in out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    blocked = [(e["step"], e["rule"]) for e in contract_events(session_id, "blocked")]
    assert blocked == [(1, "no-curl"), (2, "no-wget"), (3, "no-sudo"), (4, "no-git-push")]
    loaded = contract_events(session_id, "loaded")[0]
    assert loaded["sources"] == ["builtin", str(live_swe_home / "contracts" / "mine.yaml"), ".live-swe/contract.yaml",
                                 str(extra)]
    # shown before its first use only: the same contract is not shown again
    again = cli("run", "-t", "x", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json")
    assert "this repository adds a contract" not in again.stderr


def test_merging_is_strictest_wins():
    builtin = read(BUILTIN)
    mine = parse("name: mine\nhard:\n  - id: small-diff\n    check: {field: diff_lines, op: le, value: 50}\n"
                 "recovery: {k: 1, max_attempts: 5, fallback: stop}\n", "mine")
    merged = merge([builtin, mine])
    soft_ids = {r.id for r in merged.soft}
    hard = {r.id: r for r in merged.hard}
    # the same id in two sources: both rules apply, under the stricter kind
    assert "small-diff" in hard and "small-diff.2" in hard and "small-diff" not in soft_ids
    assert {hard["small-diff"].check.value, hard["small-diff.2"].check.value} == {1000, 50}
    assert merged.recovery.k == 1 and merged.recovery.max_attempts == 2 and merged.recovery.fallback == "stop"
    assert loosened(builtin, merged) == ["soft rule 'small-diff'", "the recovery settings"]
    assert loosened(merged, merge([merged, builtin])) == []


def scaffold_with_contract(rules: list[dict]) -> str:
    policy = yaml.safe_load(resource_path("scaffold", "scaffold.yaml").read_text())
    policy["contract"] = {"name": "agent", "governance": rules}
    return yaml.safe_dump(policy, sort_keys=False)


def test_the_scaffold_may_add_rules_but_never_remove_one(git_repo):
    rule = {"id": "no-rm", "check": {"field": "command", "op": "not_matches", "value": "^rm "}, "message": "no rm"}
    result, model = run_script(git_repo, [
        bash_reply(write_file_command("scaffold.yaml", scaffold_with_contract([rule]))),
        bash_reply("rm README.md"),
        bash_reply(write_file_command("scaffold.yaml", scaffold_with_contract([]))),
        bash_reply("rm README.md"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    scaffold = events_of(result.session_id, "scaffold")
    assert [e["kind"] for e in scaffold] == ["commit", "reject"]
    assert "contract rules may only be added, and this removes or changes governance rule 'no-rm'" in scaffold[1]["why"]
    blocked = [(e["step"], e["rule"]) for e in contract_events(result.session_id, "blocked")]
    assert blocked == [(2, "no-rm"), (4, "no-rm")]  # the rule held after the attempt to drop it
    assert "no rm" in observation(model, 2) and (git_repo / "README.md").exists()


STRIPPING_HOOKS = '''
def transform_observation(observation, step):
    return "\\n".join(line for line in observation.splitlines() if not line.startswith("Contract:"))
'''


def test_a_hook_that_strips_the_contract_notes_is_refused(git_repo):
    result, model = run_script(git_repo, [
        bash_reply(write_file_command("hooks.py", STRIPPING_HOOKS)),
        bash_reply("git push"),
        SUBMIT,
    ])
    rejected = events_of(result.session_id, "scaffold")
    assert [e["kind"] for e in rejected] == ["reject"]
    assert "removes the contract's notes" in rejected[0]["why"]
    assert "Contract: command refused" in observation(model, 2)


def test_sessions_show_reports_violations_and_figures(git_repo, tmp_path):
    contract = tmp_path / "tiny.yaml"
    contract.write_text("name: tiny\nsoft:\n  - id: tiny-diff\n    check: {field: diff_lines, op: le, value: 3}\n"
                        "    message: keep it tiny\n")
    script = write_script(tmp_path / "s.yaml", [bash_reply("git push"), bash_reply("seq 1 10 > n.txt"),
                                                 bash_reply("rm n.txt"), FIX, SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json",
              "--contract", str(contract))
    session_id = json.loads(out.stdout)["session_id"]
    report = json.loads(cli("sessions", "show", session_id, "--json").stdout)["contract"]
    assert report["hard_blocked"] == 1 and report["hard_unblocked"] == 0
    assert report["soft_detected"] == 2  # tiny-diff at step 2, test-after-last-edit at the submission
    assert report["soft_recovered"] == 1 and report["recovered_within"] == [1] and report["soft_persistent"] == 1
    assert report["hard_compliance"] == 1.0 and report["soft_compliance"] == 0.5
    assert report["drift"] == 0.4  # steps 2 and 5 of 5 had a soft violation open
    assert report["reliability"] == 0.3
    text = cli("sessions", "show", session_id).stdout
    assert "contract: builtin+tiny — hard: 1 blocked, 0 not contained; soft: 2 detected, 1 recovered (within 1 steps)" in text
    assert "step 1: no-git-push (blocked)" in text and "step 2: tiny-diff (soft, detected): keep it tiny" in text
    assert "step 5: test-after-last-edit (soft, persistent)" in text


def test_resume_keeps_the_contract_the_session_started_with(git_repo, tmp_path):
    contract = tmp_path / "c.yaml"
    contract.write_text("name: c\ngovernance:\n  - id: no-touch\n    check: {field: command, op: not_matches, value: touch}\n")
    script = write_script(tmp_path / "s.yaml", [FIX, bash_reply("touch x"), SUBMIT])
    first = json.loads(cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json",
                           "--step-limit", "1", "--contract", str(contract)).stdout)
    contract.unlink()  # the file is gone; the session's log holds the contract
    out = cli("resume", first["session_id"], "--yolo", "--json", "--step-limit", "5")
    assert json.loads(out.stdout)["status"] == "submitted", out.stderr
    assert [(e["step"], e["rule"]) for e in contract_events(first["session_id"], "blocked")] == [(2, "no-touch")]
    assert not (git_repo / "x").exists()


@pytest.mark.docker
def test_bench_mode_never_lets_a_graded_test_file_into_the_patch(suite_images, tmp_path):  # noqa: F811
    from live_swe.bench.batch import run_batch
    from live_swe.bench.preds import read_preds
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel

    row = _row("example__calc-9", "calc", suite_images["calc"], "add() subtracts instead of adding.")
    row["test_patch"] = ("diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n"
                         "+++ b/tests/test_ops.py\n@@ -1 +1 @@\n-x\n+y\n")
    suite = make_suite(tmp_path / "suite", [row])
    replies = [bash_reply("sed -i 's/return a - b/return a + b/' calc/ops.py"),
               bash_reply("ln -s tests/test_ops.py t.py && echo 'def test_skip(): pass' > t.py"),
               bash_reply("git -c core.hooksPath=/dev/null status --short"), SUBMIT]
    out = tmp_path / "run"
    summary = run_batch(suite, model="scripted", out=out, show_progress=False,
                        model_factory=lambda name, instance: ScriptedModel([Reply(r) for r in replies], name=name))
    assert summary.submitted == 1
    pred = read_preds(out / "preds.jsonl")["example__calc-9"]
    assert "+    return a + b" in pred["model_patch"]
    assert "diff --git a/tests/test_ops.py" not in pred["model_patch"] and "test_skip" not in pred["model_patch"]
    events = [json.loads(line) for line in (out / "sessions" / pred["session"] / "events.jsonl").read_text().splitlines()]
    reverted = [e for e in events if e.get("t") == "contract" and e["kind"] == "reverted"]
    assert [(e["step"], e["rule"], e["files"]) for e in reverted] == [(2, "graded-tests-untouched", ["tests/test_ops.py"])]


def test_the_readme_shows_the_builtin_contract_in_full():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert "```yaml\n" + BUILTIN.read_text() + "```" in readme


def test_a_rule_on_scaffold_changed_sees_the_step_that_wrote_to_the_scaffold(git_repo, tmp_path):
    from test_evolution_support import simple_tool, tool_reply

    contract = tmp_path / "frozen.yaml"
    contract.write_text("name: frozen\nsoft:\n  - id: no-self-edit\n"
                        "    check: {field: scaffold_changed, op: equals, value: false}\n"
                        "    message: leave the scaffold alone in this repository\n")
    script = write_script(tmp_path / "s.yaml", [tool_reply("count-lines", simple_tool("count-lines")),
                                                 bash_reply("ls"), FIX, SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json",
              "--contract", str(contract))
    session_id = json.loads(out.stdout)["session_id"]
    detected = [(e["step"], e["rule"]) for e in contract_events(session_id, "detected") if e["rule"] == "no-self-edit"]
    assert detected == [(1, "no-self-edit")], contract_events(session_id)
