"""A small GitHub REST client on the standard library: just the endpoints the issue flow uses.

It honours ``GITHUB_API_URL`` (GitHub Enterprise) and ``GITHUB_TOKEN``, retries server errors and
rate limits with backoff, and turns 401/404 into messages a person can act on. The token is sent
only in the Authorization header and never appears in an error or log line.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from live_swe.errors import UserError
from live_swe.infra.redact import redact, register

DEFAULT_API_URL = "https://api.github.com"
RETRY_STATUSES = (500, 502, 503, 504)
USER_AGENT = "live-swe"


class GitHubError(UserError):
    """A GitHub API call failed; the message says which call, why, and what to do."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class Response:
    status: int
    data: Any
    headers: dict[str, str]


class _SameHostAuthRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but send the token only to the host it was meant for."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


_OPENER = urllib.request.build_opener(_SameHostAuthRedirects)


def token_from_environment() -> str | None:
    return os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or None


@dataclass
class GitHubClient:
    repo: str  # OWNER/NAME
    token: str | None = None
    api_url: str = DEFAULT_API_URL
    max_retries: int = 4
    max_wait: float = 60.0  # never sleep longer than this for one retry
    sleep: Callable[[float], None] = time.sleep
    timeout: float = 30.0
    log: Callable[[str], None] = field(default=lambda line: None)

    def __post_init__(self) -> None:
        owner, _, name = self.repo.partition("/")
        if not owner or not name or "/" in name:
            raise UserError(f"--repo {self.repo!r} is not OWNER/NAME (for example octocat/hello-world)")
        self.api_url = self.api_url.rstrip("/")
        register(self.token)  # whatever the kernel writes from now on masks it

    @classmethod
    def from_environment(cls, repo: str, **options: Any) -> GitHubClient:
        return cls(repo=repo, token=token_from_environment(),
                   api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, **options)

    @property
    def owner(self) -> str:
        return self.repo.split("/", 1)[0]

    # -- endpoints
    def issue(self, number: int) -> dict[str, Any]:
        return self._request("GET", f"/repos/{self.repo}/issues/{number}", what=f"issue #{number}").data

    def issue_comments(self, number: int) -> list[dict[str, Any]]:
        return self._paginated(f"/repos/{self.repo}/issues/{number}/comments", what=f"comments of issue #{number}")

    def create_comment(self, number: int, body: str) -> dict[str, Any]:
        return self._request("POST", f"/repos/{self.repo}/issues/{number}/comments", {"body": body},
                             what=f"a comment on issue #{number}").data

    def update_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        return self._request("PATCH", f"/repos/{self.repo}/issues/comments/{int(comment_id)}", {"body": body},
                             what=f"comment {comment_id}").data

    def pull(self, number: int) -> dict[str, Any]:
        return self._request("GET", f"/repos/{self.repo}/pulls/{number}", what=f"pull request #{number}").data

    def pull_reviews(self, number: int) -> list[dict[str, Any]]:
        return self._paginated(f"/repos/{self.repo}/pulls/{number}/reviews", what=f"reviews of pull request #{number}")

    def pull_review_comments(self, number: int) -> list[dict[str, Any]]:
        return self._paginated(f"/repos/{self.repo}/pulls/{number}/comments",
                               what=f"review comments of pull request #{number}")

    def permission(self, user: str) -> dict[str, Any]:
        """``{"permission": "admin|write|read|none", "role_name": ...}``; a user GitHub does not know reads as none."""
        path = f"/repos/{self.repo}/collaborators/{urllib.parse.quote(user, safe='')}/permission"
        try:
            return self._request("GET", path, what=f"the permission of {user!r}").data
        except GitHubError as exc:
            if exc.status == 404:
                return {"permission": "none", "user": None}
            raise

    def open_pull(self, head_branch: str) -> dict[str, Any] | None:
        query = urllib.parse.urlencode({"head": f"{self.owner}:{head_branch}", "state": "open"})
        pulls = self._request("GET", f"/repos/{self.repo}/pulls?{query}", what="open pull requests").data
        return pulls[0] if pulls else None

    def create_pull(self, *, title: str, head: str, base: str, body: str, draft: bool) -> dict[str, Any]:
        payload = {"title": title, "head": head, "base": base, "body": body, "draft": draft}
        return self._request("POST", f"/repos/{self.repo}/pulls", payload, what="a new pull request").data

    def update_pull(self, number: int, **fields: Any) -> dict[str, Any]:
        return self._request("PATCH", f"/repos/{self.repo}/pulls/{number}", fields,
                             what=f"pull request #{number}").data

    # -- transport
    def _paginated(self, path: str, what: str) -> list[Any]:
        items: list[Any] = []
        url: str | None = f"{path}{'&' if '?' in path else '?'}per_page=100"
        while url:
            response = self._request("GET", url, what=what)
            items.extend(response.data)
            url = _next_link(response.headers.get("link", ""))
            if url and not url.startswith(self.api_url + "/"):
                break  # never send the token to a host other than the API's
        return items

    def _url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else self.api_url + path

    def _request(self, method: str, path: str, payload: Any = None, *, what: str) -> Response:
        url = self._url(path)
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": USER_AGENT,
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=body, method=method, headers=headers)
            try:
                with _OPENER.open(request, timeout=self.timeout) as raw:
                    return Response(raw.status, _decode(raw.read()), _lower(raw.headers))
            except urllib.error.HTTPError as error:
                response = Response(error.code, _decode(error.read()), _lower(error.headers))
                wait = self._retry_wait(response, attempt)
                if wait is None or attempt == self.max_retries:
                    raise self._error(method, what, response) from None
                self.log(f"GitHub answered {response.status} for {what}; retrying in {wait:.1f}s")
                self.sleep(wait)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                reason = getattr(error, "reason", error)
                if attempt == self.max_retries:
                    raise GitHubError(redact(
                        f"cannot reach the GitHub API at {self.api_url} for {what}: {reason}. "
                        "Check GITHUB_API_URL and the network.", [self.token])) from None
                self.sleep(self._backoff(attempt))
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        return min(self.max_wait, 2.0 ** attempt)

    def _retry_wait(self, response: Response, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when the failure is final."""
        if response.status in RETRY_STATUSES:
            return self._backoff(attempt)
        if response.status in (403, 429) and _is_rate_limited(response):
            retry_after = response.headers.get("retry-after")
            if retry_after and retry_after.strip().isdigit():
                return min(self.max_wait, float(retry_after))
            reset = response.headers.get("x-ratelimit-reset", "")
            if response.headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
                return min(self.max_wait, max(0.0, int(reset) - time.time()) + 1.0)
            return min(self.max_wait, 60.0)  # GitHub's advice for a secondary limit without a hint
        return None

    def _error(self, method: str, what: str, response: Response) -> GitHubError:
        detail = response.data.get("message", "") if isinstance(response.data, dict) else ""
        detail = f" ({detail})" if detail else ""
        status = response.status
        if status == 401:
            hint = ("GitHub rejected the token: GITHUB_TOKEN is missing, expired or wrong. Set GITHUB_TOKEN "
                    "(in a workflow: `GITHUB_TOKEN: ${{ github.token }}` under `env:`)")
            if not self.token:
                hint = "no token: set GITHUB_TOKEN to a token that can read issues and write pull requests"
            message = f"401 Unauthorized reading/writing {what} in {self.repo}{detail}: {hint}"
        elif status == 404:
            message = (f"404 Not Found for {what} in {self.repo}{detail}: the repository or the issue does not "
                       f"exist at {self.api_url}, or the token lacks access to it. Check --repo, --issue, "
                       "GITHUB_API_URL and the token's permissions")
        elif status == 403 and _is_rate_limited(response):
            message = f"403 rate limit for {what} in {self.repo}{detail}: still limited after {self.max_retries} retries"
        elif status == 403:
            message = (f"403 Forbidden for {what} in {self.repo}{detail}: the token lacks a permission; the workflow "
                       "needs `permissions: {contents: write, pull-requests: write, issues: write}`")
        elif status == 422:
            message = f"422 GitHub refused {what} in {self.repo}{detail}: {_errors(response.data)}"
        else:
            message = f"{status} from GitHub for {method} {what} in {self.repo}{detail}"
        return GitHubError(redact(message, [self.token]), status)


def _is_rate_limited(response: Response) -> bool:
    if response.status == 429 or "retry-after" in response.headers:
        return True
    if response.headers.get("x-ratelimit-remaining") == "0":
        return True
    message = response.data.get("message", "") if isinstance(response.data, dict) else ""
    return "rate limit" in message.lower()


def _errors(data: Any) -> str:
    if isinstance(data, dict) and isinstance(data.get("errors"), list):
        return "; ".join(str(e.get("message") or e) if isinstance(e, dict) else str(e) for e in data["errors"])
    return "see the message above"


def _next_link(header: str) -> str | None:
    for part in header.split(","):
        if 'rel="next"' in part:
            start, end = part.find("<"), part.find(">")
            if start != -1 and end > start:
                return part[start + 1:end]
    return None


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"message": raw.decode("utf-8", errors="replace")[:500]}


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers.items() if headers else [])}
