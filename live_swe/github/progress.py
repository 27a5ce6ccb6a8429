"""One comment per run on the issue or pull request: posted when the run starts, edited as it goes
(steps, cost, a link to the workflow run), and edited once more into the run's result.

Like claude-code-action's sticky comment: the thread gets one comment per run, not a trail. Edits
during the run are best effort and throttled (at most one per ``UPDATE_INTERVAL`` seconds, plus the
final one); a failure to post or edit never stops the run. The final edit is not best effort: it
raises like any other API call, so the caller reports that it failed.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from live_swe import events as ev
from live_swe.github.api import GitHubClient
from live_swe.github.summary import MARKER

UPDATE_INTERVAL = 10.0  # seconds between edits while the agent works: well inside GitHub's limits


def workflow_run_url(environ: dict[str, str] | None = None) -> str | None:
    """The Actions run this job belongs to, from the variables every runner sets; None outside Actions."""
    env = os.environ if environ is None else environ
    server, repo, run_id = env.get("GITHUB_SERVER_URL", ""), env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_RUN_ID", "")
    if not (server.startswith(("https://", "http://")) and run_id.isdigit() and repo.count("/") == 1):
        return None
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"


@dataclass
class ProgressComment:
    client: GitHubClient
    number: int  # the issue or pull request
    what: str  # "this issue", "the review comments"
    say: Callable[[str], None] = lambda line: None
    run_url: str | None = None
    comment_id: int | None = None
    steps: int = 0
    cost: float = 0.0
    _last_edit: float = field(default=float("-inf"))

    def start(self) -> None:
        try:
            self.comment_id = int(self.client.create_comment(self.number, self._working_body())["id"])
            self._last_edit = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - progress is a courtesy; the run goes on without it
            self.say(f"could not post the progress comment on #{self.number}: {exc}")

    def observe(self, event: ev.Event) -> None:
        """A run observer: each step moves the count; an edit goes out when the interval has passed."""
        if not isinstance(event, ev.Step):
            return
        self.steps = event.step
        self.cost = event.cost or self.cost
        if self.comment_id is None or time.monotonic() - self._last_edit < UPDATE_INTERVAL:
            return
        self._last_edit = time.monotonic()
        try:
            # one try, short timeout: the agent waits for this edit, so a slow API must not stall it
            quick = dataclasses.replace(self.client, max_retries=0, timeout=min(self.client.timeout, 10.0))
            quick.update_comment(self.comment_id, self._working_body())
        except Exception as exc:  # noqa: BLE001 - see start()
            self.say(f"could not update the progress comment: {exc}")

    def finish(self, body: str) -> None:
        """The run's result replaces the progress (or is posted, when no progress comment exists)."""
        body = body + self._run_line()
        if self.comment_id is not None:
            self.client.update_comment(self.comment_id, body)
        else:
            self.comment_id = int(self.client.create_comment(self.number, body)["id"])

    def finish_quietly(self, body: str) -> None:
        """Best effort: the error being reported matters more than a failure to report it."""
        try:
            self.finish(body)
        except Exception as exc:  # noqa: BLE001
            self.say(f"could not comment on #{self.number}: {exc}")

    def _working_body(self) -> str:
        done = f"{self.steps} step{'' if self.steps == 1 else 's'} so far, ${self.cost:.4f}" if self.steps else "starting"
        return f"{MARKER}\nlive-swe is working on {self.what}: {done}.\n{self._run_line()}"

    def _run_line(self) -> str:
        return f"\n[Workflow run]({self.run_url})\n" if self.run_url else ""
