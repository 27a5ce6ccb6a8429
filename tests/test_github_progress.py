"""The GitHub flow as people follow it: one progress comment per run, the agent's own summary in
the pull request, outputs that stay complete when a late step fails, and a checkout left where it
was. A fake GitHub on loopback, a real bare ``origin``, the real runner with a scripted model."""

from __future__ import annotations

import json

from conftest import bash_reply, run_git, write_script
from test_github_resolve import (
    BRANCH,
    FIX,
    LOOK,
    SUBMIT,
    cli,
    client,
    hooks,
    issue_comments,
    origin_has,
    resolve,
)

from live_swe.github import progress
from live_swe.github.flow import SUMMARY_REQUEST
from live_swe.github.resolve import ResolveOptions, resolve_issue
from live_swe.github.summary import MARKER, agent_words

RUN_URL = "https://github.example/octo/calc/actions/runs/4242"


def test_one_comment_per_run_posted_at_start_and_edited_as_it_goes(fake, world, monkeypatch):
    origin, checkout = world
    monkeypatch.setattr(progress, "UPDATE_INTERVAL", 0)  # an edit at every step
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.example")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/calc")
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    at_start = []
    outcome = resolve(fake, checkout, [LOOK, FIX, SUBMIT], on_agent=lambda agent: at_start.extend(issue_comments(fake)))

    assert outcome.status == "opened"
    [posted] = at_start  # before the agent's first step
    assert posted.startswith(MARKER) and "live-swe is working on this issue: starting." in posted
    assert f"[Workflow run]({RUN_URL})" in posted
    [comment] = fake.comments[7][2:]  # one comment for the run, not a trail
    assert len(fake.seen("POST", "/issues/7/comments")) == 1
    edits = fake.comment_updates(comment["id"])
    assert "1 step so far" in edits[0] and "2 steps so far" in edits[1] and "3 steps so far" in edits[2]
    assert all(RUN_URL in edit for edit in edits)
    assert edits[-1] == comment["body"]  # the last edit is the result
    assert "opened pull request #8" in comment["body"] and fake.pulls[0]["html_url"] in comment["body"]
    assert RUN_URL in comment["body"]


def test_edits_are_throttled_and_failures_to_edit_do_not_stop_the_run(fake, world, monkeypatch):
    origin, checkout = world
    monkeypatch.setattr(progress, "UPDATE_INTERVAL", 1e9)
    outcome = resolve(fake, checkout, [LOOK, LOOK, FIX, SUBMIT])
    [comment] = fake.comments[7][2:]
    assert len(fake.comment_updates(comment["id"])) == 1  # only the result
    assert outcome.status == "opened"

    run_git(checkout, "checkout", "-q", "main")
    monkeypatch.setattr(progress, "UPDATE_INTERVAL", 0)
    for _ in range(3):
        fake.fail_next("500", "PATCH", "/issues/comments/")  # the edits while it works fail, and are not retried
    assert resolve(fake, checkout, [FIX, LOOK, SUBMIT]).status == "updated"
    assert "updated pull request #8" in issue_comments(fake)[-1]
    edits = [r.status for r in fake.seen("PATCH", "/issues/comments/")]
    assert edits[-4:] == [500, 500, 500, 200]  # three steps' edits, one try each, then the result


def test_without_a_progress_comment_the_result_is_posted(fake, world):
    origin, checkout = world
    fake.fail_next("401", "POST", "/issues/7/comments")  # the progress comment cannot be posted
    assert resolve(fake, checkout, [FIX, SUBMIT]).status == "opened"
    [comment] = issue_comments(fake)
    assert "opened pull request #8" in comment


SUMMARY = bash_reply(
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "add() subtracted its arguments; it now adds them. Checked with `python -c 'import calc'`.\n"
    "This closes #12 and fixes octo/other#3; thanks @octocat and @octo/team.\n"
    "<!-- the rest is hidden --> <details><summary>x</summary>\n"
    "```python\nprint('an unclosed fence')\n"
    "The token is ghs_fakeTokenValue0123456789abcdef.")


def test_the_pull_request_body_opens_with_the_agents_own_summary(fake, world):
    origin, checkout = world
    seen = []
    resolve(fake, checkout, [FIX, SUMMARY], on_agent=lambda agent: seen.append(agent))
    assert SUMMARY_REQUEST in seen[0].messages[1]["content"]  # the task asks for it
    body = fake.pulls[0]["body"]
    section = body.split("### Summary, in the agent's words\n", 1)[1].split("\n### What changed", 1)[0]
    assert section.startswith("> add() subtracted its arguments; it now adds them.")
    assert "`python -c 'import calc'`" in section  # Markdown renders as written
    # ... but acts on nothing: no ping, no issue reference or closing, no hidden rest
    assert "@octocat" not in body and "@\u200boctocat" in section and "@\u200bocto/team" in section
    assert "#12" not in body and "#\u200b12" in section and "octo/other#\u200b3" in section
    assert "closes" not in section.lower() and "fixes" not in section.lower()
    assert body.count("<") == 1 and "&lt;!-- the rest is hidden -->" in section  # the one < is the marker's
    assert section.count("```") == 2 and section.rstrip().endswith("> ```")  # the open fence is closed
    assert fake.token not in body and "The token is ***." in section
    assert body.index("### Summary") < body.index("### What changed") < body.index("### Run")


def test_agent_words_cap_the_length_and_quote_every_line():
    text = agent_words("line one\n\nline three " + "x" * 5000, limit=100)
    lines = text.splitlines()
    assert lines[:2] == ["> line one", ">"] and len(lines) == 3
    assert lines[2].startswith("> line three xxx") and lines[2].endswith("x…") and len(text) == 100 + 3 * 2 - 1
    assert agent_words("fixture fix-up: resolves nothing") == "> fixture fix-up: resolves nothing"
    assert agent_words("Resolves: https://github.com/o/r/issues/3") == "> R\u200besolves: https://github.com/o/r/issues/3"


def test_short_fields_are_defused_too():
    from live_swe.github.summary import one_line

    assert one_line("see @alice; fixes #4\n<b>x</b> `y`") == "see @\u200balice; f\u200bixes #\u200b4 &lt;b>x&lt;/b> 'y'"


def test_a_submission_without_words_says_so(fake, world):
    origin, checkout = world
    resolve(fake, checkout, [FIX, "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"])
    assert "### Summary, in the agent's words\n> (the agent gave no summary)\n" in fake.pulls[0]["body"]


# -- outputs on partial failure (the action's outputs come from this JSON)

def test_json_names_the_pushed_branch_when_the_pull_request_fails(fake, world, tmp_path):
    origin, checkout = world
    fake.fail_next("401", "POST", "/pulls")
    done = cli(fake, checkout, write_script(tmp_path / "s.yaml", [FIX, SUBMIT]))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "error" and "401 Unauthorized" in result["message"]
    assert result["branch"] == BRANCH and origin_has(origin, BRANCH)
    assert result["pr_number"] is None and result["session_id"] and result["steps"] == 2


def test_json_names_the_pull_request_when_the_last_comment_fails(fake, world, tmp_path):
    origin, checkout = world
    for _ in range(20):  # every edit of the run's comment fails, the result's too
        fake.fail_next("401", "PATCH", "/issues/comments/")
    done = cli(fake, checkout, write_script(tmp_path / "s.yaml", [FIX, SUBMIT]))
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 2 and result["status"] == "error"
    assert result["pr_number"] == 8 and result["pr_url"] == fake.pulls[0]["html_url"]
    assert result["branch"] == BRANCH


def test_json_names_no_branch_when_nothing_was_pushed(fake, world, tmp_path):
    origin, checkout = world
    done = cli(fake, checkout, write_script(tmp_path / "s.yaml", [SUBMIT]))
    result = json.loads(done.stdout)
    assert result["status"] == "failed" and result["branch"] is None and not origin_has(origin, BRANCH)


# -- the checkout afterwards

def test_the_checkout_returns_to_the_branch_it_started_on(fake, world, tmp_path):
    origin, checkout = world
    run_git(checkout, "checkout", "-q", "-b", "work")
    done = cli(fake, checkout, write_script(tmp_path / "s.yaml", [FIX, SUBMIT]), "--base", "main")
    assert done.returncode == 0, done.stderr
    assert run_git(checkout, "symbolic-ref", "--short", "HEAD").strip() == "work"
    assert run_git(checkout, "status", "--porcelain") == ""
    assert (checkout / "calc.py").read_text().endswith("a - b\n")  # the fix is on the branch, not here
    assert run_git(checkout, "show", f"{BRANCH}:calc.py").endswith("a + b\n")


def test_a_detached_checkout_returns_to_its_commit(fake, world):
    origin, checkout = world
    run_git(checkout, "checkout", "-q", "--detach", "HEAD")
    head = run_git(checkout, "rev-parse", "HEAD")
    resolve(fake, checkout, [SUBMIT], base="main")  # nothing to push: the run's branch had no change
    assert run_git(checkout, "rev-parse", "HEAD") == head
    assert run_git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # still detached


def test_unsubmitted_changes_stay_on_the_runs_branch(fake, world):
    origin, checkout = world
    lines = []
    options = ResolveOptions(repo=fake.repo, issue=7, workdir=checkout, model="scripted:test", actor="maint")
    outcome = resolve_issue(options, client(fake), hooks([FIX]), log=lines.append)  # runs out before submitting
    assert outcome.status == "failed"
    assert run_git(checkout, "symbolic-ref", "--short", "HEAD").strip() == BRANCH
    assert (checkout / "calc.py").read_text().endswith("a + b\n")  # the agent's work is not lost
    assert any("git checkout main" in line for line in lines)
