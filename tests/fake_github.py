"""A fake GitHub REST API: a real HTTP server on 127.0.0.1 in a thread, with GitHub's response shapes.

Implements the endpoints live-swe uses (issue, issue comments and their edits, collaborator permission,
pulls with their reviews and review comments) and
can fail on purpose: ``fail_next(kind, method, path_part)`` with kind 401, 404, 500 or rate_limit
(403 with ``x-ratelimit-remaining: 0``) or rate_limit_429 (429 with ``retry-after``).
Every request is recorded in ``requests`` (method, path, status, body, authorization header).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    status: int
    body: Any
    authorization: str


@dataclass
class Failure:
    kind: str
    method: str | None
    path_part: str | None


@dataclass
class FakeGitHub:
    owner: str = "octo"
    name: str = "calc"
    token: str = "ghs_fakeTokenValue0123456789abcdef"
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin|maintain|write|triage|read|none
    pulls: list[dict[str, Any]] = field(default_factory=list)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pull number -> reviews
    review_comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pull number -> line comments
    requests: list[Recorded] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    comments_per_page: int = 30
    _next_id: int = 1000
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- setup
    @property
    def repo(self) -> str:
        return f"{self.owner}/{self.name}"

    def add_issue(self, number: int, title: str, body: str, author: str = "reporter",
                  comments: list[tuple[str, str]] = ()) -> None:
        self.issues[number] = {
            "url": f"{self.url}/repos/{self.repo}/issues/{number}",
            "html_url": f"https://github.example/{self.repo}/issues/{number}",
            "id": self._id(), "number": number, "title": title, "body": body, "state": "open",
            "user": {"login": author, "id": self._id(), "type": "User"},
            "labels": [], "comments": 0, "author_association": "NONE",
        }
        self.comments[number] = []
        for login, text in comments:
            self._add_comment(number, login, text)

    def add_pull(self, number: int, head: str, base: str = "main", title: str = "A change", body: str = "",
                 author: str = "reporter", head_repo: str | None = None, sha: str = "") -> dict[str, Any]:
        """An open pull request; it is an issue too (GitHub numbers both alike), with ``pull_request``."""
        self.add_issue(number, title, body, author=author)
        self.issues[number]["pull_request"] = {"url": f"{self.url}/repos/{self.repo}/pulls/{number}"}
        pull = self._pull(number, title, body, head, base, draft=False)
        pull["head"].update({"sha": sha, "repo": {"full_name": head_repo or self.repo}})
        self.pulls.append(pull)
        self.reviews[number], self.review_comments[number] = [], []
        return pull

    def add_review(self, number: int, login: str, body: str, state: str = "CHANGES_REQUESTED") -> None:
        self.reviews[number].append({"id": self._id(), "user": {"login": login, "type": "User"}, "body": body,
                                     "state": state})

    def add_review_comment(self, number: int, login: str, path: str, line: int, body: str) -> None:
        self.review_comments[number].append({"id": self._id(), "user": {"login": login, "type": "User"},
                                             "path": path, "line": line, "body": body})

    def comment_updates(self, comment_id: int) -> list[str]:
        """The bodies a comment was edited to, in order."""
        return [r.body["body"] for r in self.requests
                if r.method == "PATCH" and r.path.endswith(f"/issues/comments/{comment_id}") and r.status == 200]

    def fail_next(self, kind: str, method: str | None = None, path_part: str | None = None) -> None:
        self.failures.append(Failure(kind, method, path_part))

    def seen(self, method: str, path_part: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and path_part in r.path]

    # -- server
    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

            def do_PATCH(self) -> None:
                fake._handle(self, "PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- internals
    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _add_comment(self, number: int, login: str, body: str) -> dict[str, Any]:
        comment = {
            "id": self._id(), "body": body, "user": {"login": login, "id": self._id(), "type": "User"},
            "html_url": f"https://github.example/{self.repo}/issues/{number}#issuecomment-{self._next_id}",
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "author_association": "NONE",
        }
        self.comments[number].append(comment)
        self.issues[number]["comments"] = len(self.comments[number])
        return comment

    def _take_failure(self, method: str, path: str) -> Failure | None:
        for failure in self.failures:
            if (failure.method in (None, method)) and (failure.path_part is None or failure.path_part in path):
                self.failures.remove(failure)
                return failure
        return None

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with self._lock:
            status, payload, headers = self._route(handler, method, body)
            self.requests.append(Recorded(method, handler.path, status, body, handler.headers.get("Authorization", "")))
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, handler: BaseHTTPRequestHandler, method: str, body: Any) -> tuple[int, Any, dict[str, str]]:  # noqa: C901 - a router: one branch per endpoint, read top to bottom
        docs = {"documentation_url": "https://docs.github.com/rest"}
        split = urlsplit(handler.path)
        path, query = split.path, parse_qs(split.query)
        failure = self._take_failure(method, path)
        if failure and failure.kind == "401" or handler.headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials", **docs, "status": "401"}, {}
        if failure:
            if failure.kind == "404":
                return 404, {"message": "Not Found", **docs, "status": "404"}, {}
            if failure.kind == "500":
                return 500, {"message": "Server Error"}, {}
            if failure.kind == "rate_limit":
                return 403, {"message": "API rate limit exceeded for installation ID 1.", **docs}, {
                    "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                    "x-ratelimit-reset": str(int(time.time())), "x-ratelimit-resource": "core"}
            if failure.kind == "rate_limit_429":
                return 429, {"message": "You have exceeded a secondary rate limit.", **docs}, {"retry-after": "0"}
            raise AssertionError(f"unknown failure kind {failure.kind}")
        prefix = f"/repos/{self.owner}/{self.name}"
        if not path.startswith(prefix + "/"):
            return 404, {"message": "Not Found", **docs}, {}
        rest = path[len(prefix):]
        if match := re.fullmatch(r"/issues/(\d+)", rest):
            issue = self.issues.get(int(match[1]))
            return (200, issue, {}) if issue and method == "GET" else (404, {"message": "Not Found", **docs}, {})
        if match := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(match[1])
            if number not in self.issues:
                return 404, {"message": "Not Found", **docs}, {}
            if method == "POST":
                if not isinstance(body, dict) or not body.get("body"):
                    return 422, {"message": "Validation Failed", "errors": [{"field": "body", "code": "missing"}]}, {}
                return 201, self._add_comment(number, "github-actions[bot]", body["body"]), {}
            return self._page(handler, self.comments[number], query)
        if (match := re.fullmatch(r"/issues/comments/(\d+)", rest)) and method == "PATCH":
            for comment in (c for thread in self.comments.values() for c in thread):
                if comment["id"] == int(match[1]):
                    comment["body"] = body["body"]
                    return 200, comment, {}
            return 404, {"message": "Not Found", **docs}, {}
        if (match := re.fullmatch(r"/pulls/(\d+)", rest)) and method == "GET":
            found = [p for p in self.pulls if p["number"] == int(match[1])]
            return (200, found[0], {}) if found else (404, {"message": "Not Found", **docs}, {})
        if match := re.fullmatch(r"/pulls/(\d+)/(reviews|comments)", rest):
            store = self.reviews if match[2] == "reviews" else self.review_comments
            if int(match[1]) not in store:
                return 404, {"message": "Not Found", **docs}, {}
            return self._page(handler, store[int(match[1])], query)
        if match := re.fullmatch(r"/collaborators/([^/]+)/permission", rest):
            login = match[1]
            if login not in self.permissions:
                return 404, {"message": "Not Found", **docs}, {}
            role = self.permissions[login]
            legacy = {"maintain": "write", "triage": "read"}.get(role, role)
            return 200, {"permission": legacy, "role_name": role,
                         "user": {"login": login, "id": self._id(), "type": "User"}}, {}
        if rest == "/pulls" and method == "GET":
            head = (query.get("head") or [""])[0]
            state = (query.get("state") or ["open"])[0]
            found = [p for p in self.pulls if (not head or p["head"]["label"] == head) and p["state"] == state]
            return 200, found, {}
        if rest == "/pulls" and method == "POST":
            return self._create_pull(body)
        if (match := re.fullmatch(r"/pulls/(\d+)", rest)) and method == "PATCH":
            for pull in self.pulls:
                if pull["number"] == int(match[1]):
                    pull.update({k: v for k, v in body.items() if k in ("title", "body", "state", "base")})
                    return 200, pull, {}
            return 404, {"message": "Not Found", **docs}, {}
        return 404, {"message": "Not Found", **docs}, {}

    def _create_pull(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        label = f"{self.owner}:{body['head']}"
        if any(p["head"]["label"] == label and p["state"] == "open" for p in self.pulls):
            return 422, {"message": "Validation Failed", "errors": [
                {"resource": "PullRequest", "code": "custom",
                 "message": f"A pull request already exists for {label}."}]}, {}
        number = max([*self.issues, *(p["number"] for p in self.pulls), 0]) + 1
        pull = self._pull(number, body["title"], body.get("body"), body["head"], body["base"], bool(body.get("draft")))
        self.pulls.append(pull)
        self.add_issue(number, body["title"], body.get("body") or "", author="github-actions[bot]")
        self.issues[number]["pull_request"] = {"url": pull["url"]}  # a pull request is an issue too
        self.reviews[number], self.review_comments[number] = [], []
        return 201, pull, {}

    def _pull(self, number: int, title: str, body: str | None, head: str, base: str, draft: bool) -> dict[str, Any]:
        return {
            "url": f"{self.url}/repos/{self.repo}/pulls/{number}", "id": self._id(), "number": number,
            "html_url": f"https://github.example/{self.repo}/pull/{number}", "state": "open",
            "title": title, "body": body, "draft": draft,
            "head": {"label": f"{self.owner}:{head}", "ref": head, "repo": {"full_name": self.repo}},
            "base": {"label": f"{self.owner}:{base}", "ref": base, "repo": {"full_name": self.repo}},
        }

    def _page(self, handler, items: list[Any], query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        per_page = min(int((query.get("per_page") or ["30"])[0]), self.comments_per_page)
        page = int((query.get("page") or ["1"])[0])
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(items):
            base = f"{self.url}{urlsplit(handler.path).path}"
            headers["Link"] = (f'<{base}?per_page={per_page}&page={page + 1}>; rel="next", '
                               f'<{base}?per_page={per_page}&page={(len(items) - 1) // per_page + 1}>; rel="last"')
        return 200, chunk, headers


def serve() -> FakeGitHub:
    """A started fake; the caller stops it."""
    return FakeGitHub().start()
