"""Continue a pull request: ``/live-swe`` in a review or a comment on it by someone with write access.

The agent works on the pull request's own branch with the reviews, the line comments and the
conversation as its task, and its submitted change is pushed there as one more commit (with lease:
if someone pushed meanwhile, nothing is overwritten). Only branches of this repository are
continued: a fork's branch is not ours to push to. Repository instructions come from the base
branch, never from the pull request's branch, which is the very change under review.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from live_swe.github import summary
from live_swe.github.api import GitHubClient
from live_swe.github.flow import (
    SUMMARY_REQUEST,
    ResolveOptions,
    ResolveOutcome,
    actor_of,
    author,
    checkout_for_run,
    clip,
    delimiters,
    grade_lines,
    refused,
    run_agent,
    session_view,
    settle,
    submission_summary,
    untrusted_note,
    with_observer,
)
from live_swe.github.gitops import BOT_EMAIL, BOT_NAME, Identity, secret_forms
from live_swe.github.progress import ProgressComment, workflow_run_url
from live_swe.infra.redact import redact


def review_task(repo: str, pull: dict[str, Any], reviews: list[dict[str, Any]], line_comments: list[dict[str, Any]],
                comments: list[dict[str, Any]], nonce: str | None = None) -> str:
    """The agent's task: the pull request's review feedback as delimited, untrusted data."""
    begin, end = delimiters(nonce)
    lines = [
        f"Continue pull request #{pull.get('number')} of the repository {repo}: its branch is checked out here. "
        "Address the review feedback below.",
        "",
        untrusted_note(begin, end, "the change reviewers want"),
        "",
        begin,
        f"Pull request title: {' '.join((pull.get('title') or '').split())}",
    ]
    for item in reviews:
        if (item.get("body") or "").strip() and summary.MARKER not in item["body"]:
            lines += ["", f"--- review by {author(item)} ({item.get('state', '').lower()}) ---", clip(item["body"])]
    for item in line_comments:
        where = f"{item.get('path')}:{item.get('line') or item.get('original_line') or '?'}"
        lines += ["", f"--- comment by {author(item)} on {where} ---", clip(item.get("body"))]
    for item in comments:
        if summary.MARKER not in (item.get("body") or ""):
            lines += ["", f"--- comment by {author(item)} ---", clip(item.get("body"))]
    lines += [end, "", "Change the code as the reviewers ask, check the change, then submit. Do not commit, push, or "
              "switch branches yourself: live-swe commits your submitted diff and pushes it to the pull request.",
              SUMMARY_REQUEST]
    return "\n".join(lines)


def _not_continued(pull: dict[str, Any], repo: str) -> str:
    if pull.get("state") != "open":
        return f"pull request #{pull.get('number')} is {pull.get('state')}, not open"
    head_repo = ((pull.get("head") or {}).get("repo") or {}).get("full_name")
    if head_repo != repo:
        return (f"the branch of pull request #{pull.get('number')} is in {head_repo or 'a deleted repository'}, "
                f"not in {repo}; live-swe pushes only to this repository's branches")
    return ""


def continue_pull(options: ResolveOptions, client: GitHubClient, hooks, store,
                  say: Callable[[str], None], outcome: ResolveOutcome) -> ResolveOutcome:
    number = options.issue
    hidden = secret_forms(client.token)
    pull = client.pull(number)
    branch = str(pull["head"]["ref"])
    outcome.branch = branch
    actor = actor_of(options)
    if why := refused(client, options, actor, say):
        outcome.status, outcome.message = "refused", why
        return outcome
    if why := _not_continued(pull, options.repo):
        client.create_comment(number, f"{summary.MARKER}\nlive-swe did not run: {summary.one_line(why, 300)}.\n")
        outcome.status, outcome.message = "refused", why
        say(f"refused: {why}")
        return outcome
    if options.base and options.base != pull["base"]["ref"]:
        say(f"--base {options.base} left aside: the pull request's base is {pull['base']['ref']}")
    reviews, line_comments = client.pull_reviews(number), client.pull_review_comments(number)
    comments = client.issue_comments(number)
    say(f"pull request #{number}: {len(reviews)} review(s), {len(line_comments)} line comment(s), "
        f"{len(comments)} comment(s)")

    progress = ProgressComment(client, number, "the review comments", say, run_url=workflow_run_url())
    progress.start()
    facts = summary.RunFacts(issue=number, session_id="", model="", status="error", steps=0, cost=0.0)
    with checkout_for_run(options, client, progress, outcome, hidden, say) as checkout:
        _, base_sha = checkout.resolve_base(str(pull["base"]["ref"]))
        _, head_sha = checkout.resolve_base(branch)  # the branch as it is on origin now
        checkout.start_branch(branch, head_sha)
        say(f"continuing {branch} at {head_sha[:10]}")
        result = run_agent(options, checkout, review_task(options.repo, pull, reviews, line_comments, comments),
                           base_sha, {"github": {"repo": options.repo, "pull": number, "branch": branch,
                                                 "actor": actor}}, facts, with_observer(hooks, progress.observe), store)
        if settle(result, outcome, progress, facts, hidden, say, "address the review comments"):
            return outcome
        view = session_view(result.session_id, store)
        message = (f"Address review comments on #{number}\n\nWritten by live-swe (session {result.session_id}), "
                   f"asked by {actor}.\n")
        commit = checkout.commit_patch(result.patch, head_sha, message, author=Identity.for_actor(actor),
                                       committer=Identity(BOT_NAME, BOT_EMAIL))
        checkout.push(branch, expected=head_sha)  # someone else's newer commit is never overwritten
        outcome.pushed, outcome.pr_number, outcome.pr_url = True, number, pull.get("html_url")
        say(f"pushed {commit[:10]} to {branch}")
        report = summary.run_report(facts, checkout.diffstat(head_sha), view, hidden,
                                    grade_lines(result.session_id, store), submission_summary(view))
        progress.finish(redact(f"{summary.MARKER}\nlive-swe pushed {commit[:10]} to `{branch}` for the review "
                               f"comments, asked by {summary.one_line(actor, 60)}.\n\n" + "\n".join(report) + "\n", hidden))
    outcome.status = "updated"
    return outcome
