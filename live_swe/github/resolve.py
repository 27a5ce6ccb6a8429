"""``live-swe github resolve``: turn one issue into one pull request.

1. read the issue and its comments; 2. refuse (with a comment) unless the actor can write to the
repository; 3. post the run's progress comment, branch ``live-swe/issue-N`` from the base and run
the agent headless there; 4. commit the submitted patch, push, open or update the pull request (its
body opens with the agent's own summary), and turn the progress comment into the link; 5. when the
agent fails, say why in that comment and push nothing. Any other failure after the permission check
is said there too, with what was pushed. A rerun reuses the branch (force-push with lease) and the
pull request (its body is replaced). The checkout is back on the branch it started on at the end.

A number that is a pull request continues that pull request instead (:mod:`live_swe.github.review`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from live_swe.github import review, summary
from live_swe.github.api import GitHubClient, GitHubError
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
    has_write,
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

__all__ = ["ResolveOptions", "ResolveOutcome", "branch_name", "has_write", "issue_task", "resolve_issue"]


def branch_name(issue: int) -> str:
    return f"live-swe/issue-{issue}"


def issue_task(repo: str, issue: dict[str, Any], comments: list[dict[str, Any]], nonce: str | None = None) -> str:
    """The agent's task: the issue as clearly delimited, untrusted data.

    The delimiters carry a random nonce, so text inside the issue cannot fake the end of the block.
    """
    begin, end = delimiters(nonce)
    number = issue.get("number")
    lines = [
        f"Resolve GitHub issue #{number} of the repository {repo}, which is checked out here.",
        "",
        untrusted_note(begin, end, "the problem"),
        "",
        begin,
        f"Title: {' '.join((issue.get('title') or '').split())}",
        f"Opened by: {author(issue)}",
        "",
        clip(issue.get("body")) or "(no description)",
    ]
    for comment in comments:
        if summary.MARKER in (comment.get("body") or ""):
            continue  # our own status comments are not part of the problem
        lines += ["", f"--- comment by {author(comment)} ---", clip(comment.get("body"))]
    lines += [end, "", "Change the code so the issue is fixed, check the change, then submit. Do not commit, "
              "push, or create branches yourself: live-swe commits your submitted diff and opens the pull request.",
              SUMMARY_REQUEST]
    return "\n".join(lines)


def resolve_issue(
    options: ResolveOptions,
    client: GitHubClient,
    hooks=None,
    store=None,
    log: Callable[[str], None] = lambda line: None,
    outcome: ResolveOutcome | None = None,
) -> ResolveOutcome:
    """``outcome``, when given, is filled in as the flow goes, so a caller still knows what was pushed
    and opened when a later step raises."""
    number, branch = options.issue, branch_name(options.issue)
    hidden = secret_forms(client.token)
    outcome = outcome or ResolveOutcome("error", branch)

    def say(line: str) -> None:
        log(redact(line, hidden))

    # 1. the issue (or a pull request to continue)
    issue = client.issue(number)
    if "pull_request" in issue:
        return review.continue_pull(options, client, hooks, store, say, outcome)
    outcome.branch = branch
    comments = client.issue_comments(number)
    say(f"issue #{number}: {len(comments)} comment(s)")

    # 2. who asked
    actor = actor_of(options)
    if why := refused(client, options, actor, say):
        outcome.status, outcome.message = "refused", why
        return outcome

    # 3. branch and run. From here on a failure is also said on the issue (best effort), in the
    # run's one comment, so the maintainer who triggered it learns why without reading the job's log.
    progress = ProgressComment(client, number, "this issue", say, run_url=workflow_run_url())
    progress.start()
    facts = summary.RunFacts(issue=number, session_id="", model="", status="error", steps=0, cost=0.0)
    with checkout_for_run(options, client, progress, outcome, hidden, say) as checkout:
        base_name, base_sha = checkout.resolve_base(options.base)
        checkout.start_branch(branch, base_sha)
        say(f"branch {branch} from {base_name} ({base_sha[:10]})")
        result = run_agent(options, checkout, issue_task(options.repo, issue, comments), base_sha,
                           {"github": {"repo": options.repo, "issue": number, "branch": branch, "actor": actor,
                                       "base": base_name}}, facts, with_observer(hooks, progress.observe), store)
        if settle(result, outcome, progress, facts, hidden, say, "resolve this issue"):
            return outcome  # 5. nothing worth pushing

        # 4. commit, push, pull request, link
        view = session_view(result.session_id, store)
        checkout.commit_patch(result.patch, base_sha, summary.commit_message(number, issue.get("title") or "", result.session_id),
                              author=Identity.for_actor(actor), committer=Identity(BOT_NAME, BOT_EMAIL))
        checkout.push(branch)
        outcome.pushed = True
        say(f"pushed {branch}")
        body = summary.pr_body(facts, checkout.diffstat(base_sha), view, hidden,
                               grade_lines=grade_lines(result.session_id, store),
                               agent_summary=submission_summary(view))
        title = summary.pr_title(number, issue.get("title") or "")
        pull, updated = _open_or_update_pull(client, branch, base_name, title, body, options.draft)
        outcome.pr_number, outcome.pr_url = pull["number"], pull["html_url"]
        progress.finish(summary.link_comment(pull["number"], pull["html_url"], updated, facts))
    outcome.status = "updated" if updated else "opened"
    say(f"{outcome.status} pull request #{pull['number']}: {pull['html_url']}")
    return outcome


def _open_or_update_pull(client: GitHubClient, branch: str, base: str, title: str, body: str,
                         draft: bool) -> tuple[dict[str, Any], bool]:
    """The branch's open pull request with a fresh title and body, or a new one. True when updated."""
    existing = client.open_pull(branch)
    if existing is None:
        try:
            return client.create_pull(title=title, head=branch, base=base, body=body, draft=draft), False
        except GitHubError as exc:
            # 422 "already exists": one appeared meanwhile (a retried request, a parallel run)
            existing = client.open_pull(branch) if exc.status == 422 else None
            if existing is None:
                raise
    return client.update_pull(existing["number"], title=title, body=body), True
