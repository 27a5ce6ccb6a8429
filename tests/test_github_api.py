"""The REST client against a real HTTP server on loopback: shapes, retries, clear errors, no token leaks."""

from __future__ import annotations

import socket

import pytest
from fake_github import FakeGitHub

from live_swe.github.api import GitHubClient, GitHubError


@pytest.fixture
def fake():
    server = FakeGitHub().start()
    server.add_issue(7, "add() subtracts", "calc.add(2, 3) returns -1", comments=[("alice", "confirmed")])
    server.permissions.update({"maint": "maintain", "reader": "read"})
    yield server
    server.stop()


def client_for(fake: FakeGitHub, token: str | None = None, **options) -> GitHubClient:
    waits: list[float] = []
    client = GitHubClient(fake.repo, token=fake.token if token is None else token, api_url=fake.url,
                          sleep=waits.append, **options)
    client.waits = waits  # what the client would have slept, for assertions
    return client


def test_reads_issue_and_comments_with_githubs_shapes(fake):
    client = client_for(fake)
    issue = client.issue(7)
    assert issue["title"] == "add() subtracts" and issue["user"]["login"] == "reporter"
    assert [c["body"] for c in client.issue_comments(7)] == ["confirmed"]
    assert fake.requests[0].authorization == f"Bearer {fake.token}"


def test_comments_follow_pagination(fake):
    fake.comments_per_page = 2
    for i in range(5):
        fake._add_comment(7, "bob", f"c{i}")
    bodies = [c["body"] for c in client_for(fake).issue_comments(7)]
    assert bodies == ["confirmed", "c0", "c1", "c2", "c3", "c4"]
    assert len(fake.seen("GET", "/comments")) == 3


def test_environment_configures_url_and_token(fake, monkeypatch):
    monkeypatch.setenv("GITHUB_API_URL", fake.url + "/")
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    client = GitHubClient.from_environment(fake.repo)
    assert client.issue(7)["number"] == 7


def test_permission_including_maintain_and_unknown_user(fake):
    client = client_for(fake)
    maint = client.permission("maint")
    assert (maint["permission"], maint["role_name"], maint["user"]["login"]) == ("write", "maintain", "maint")
    assert client.permission("reader")["permission"] == "read"
    assert client.permission("stranger")["permission"] == "none"


def test_bad_token_is_a_clear_401_without_the_token(fake):
    bad = "ghp_wrongWrongWrong123456"
    with pytest.raises(GitHubError) as info:
        client_for(fake, token=bad).issue(7)
    message = str(info.value)
    assert info.value.status == 401 and "GITHUB_TOKEN" in message and "Bad credentials" in message
    assert bad not in message and fake.token not in message
    assert len(fake.requests) == 1  # not retried


def test_missing_token_says_so(fake):
    with pytest.raises(GitHubError, match="no token: set GITHUB_TOKEN"):
        client_for(fake, token="").issue(7)


def test_injected_401_is_reported(fake):
    fake.fail_next("401", "GET", "/issues/7")
    with pytest.raises(GitHubError, match="401"):
        client_for(fake).issue(7)


def test_404_names_repository_issue_and_access(fake):
    with pytest.raises(GitHubError) as info:
        client_for(fake).issue(99)
    message = str(info.value)
    assert info.value.status == 404 and "issue #99" in message and "octo/calc" in message
    assert "lacks access" in message and fake.token not in message
    fake.fail_next("404")
    with pytest.raises(GitHubError, match="404 Not Found"):
        client_for(fake).issue(7)


def test_server_error_is_retried_once_then_succeeds(fake):
    fake.fail_next("500", "GET", "/issues/7")
    client = client_for(fake)
    assert client.issue(7)["number"] == 7
    assert [r.status for r in fake.seen("GET", "/issues/7")] == [500, 200]
    assert client.waits == [1.0]


def test_post_retried_after_server_error_creates_one_comment(fake):
    fake.fail_next("500", "POST", "/comments")
    client_for(fake).create_comment(7, "hello")
    assert [r.status for r in fake.seen("POST", "/comments")] == [500, 201]
    assert [c["body"] for c in fake.comments[7]] == ["confirmed", "hello"]


def test_persistent_server_errors_give_up_with_a_message(fake):
    for _ in range(3):
        fake.fail_next("500")
    client = client_for(fake, max_retries=2)
    with pytest.raises(GitHubError, match="500 from GitHub"):
        client.issue(7)
    assert len(fake.requests) == 3 and client.waits == [1.0, 2.0]


def test_primary_rate_limit_waits_for_reset_and_retries(fake):
    fake.fail_next("rate_limit", "GET", "/issues/7")
    client = client_for(fake)
    assert client.issue(7)["number"] == 7
    assert [r.status for r in fake.seen("GET", "/issues/7")] == [403, 200]
    assert len(client.waits) == 1 and 0 < client.waits[0] <= 2.0  # reset is now: wait about a second


def test_secondary_rate_limit_honours_retry_after(fake):
    fake.fail_next("rate_limit_429", "POST", "/pulls")
    pull = client_for(fake).create_pull(title="t", head="live-swe/issue-7", base="main", body="b", draft=False)
    assert pull["number"] == 8
    assert [r.status for r in fake.seen("POST", "/pulls")] == [429, 201]


def test_rate_limit_waits_are_capped(fake):
    fake.fail_next("rate_limit_429")
    client = client_for(fake, max_wait=0.5)
    client.issue(7)
    assert client.waits == [0.0]


def test_plain_403_is_not_retried_and_names_permissions(fake):
    # a 403 without rate-limit headers: a missing permission, not worth retrying
    fake.permissions.clear()
    original = fake._route

    def forbid(handler, method, body):
        if method == "POST":
            return 403, {"message": "Resource not accessible by integration"}, {}
        return original(handler, method, body)

    fake._route = forbid
    with pytest.raises(GitHubError, match="pull-requests: write"):
        client_for(fake).create_comment(7, "x")
    assert len(fake.seen("POST", "/comments")) == 1


def test_unreachable_api_is_clear(fake):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = GitHubClient(fake.repo, token=fake.token, api_url=f"http://127.0.0.1:{port}", sleep=lambda s: None,
                          max_retries=1)
    with pytest.raises(GitHubError, match="cannot reach the GitHub API"):
        client.issue(7)


def test_bad_repo_name_is_rejected():
    from live_swe.errors import UserError

    with pytest.raises(UserError, match="OWNER/NAME"):
        GitHubClient("just-a-name")


def test_redirects_keep_the_token_on_the_api_host(fake):
    """A redirect to another host is followed without the Authorization header."""
    other = FakeGitHub(token="").start()  # a second server: it answers 401 to any token, so record only
    other.add_issue(7, "moved", "body")
    try:
        original = fake._route

        def moved(handler, method, body):
            if handler.path == "/repos/octo/calc/issues/7":
                return 301, {"message": "Moved Permanently"}, {"Location": f"{other.url}/repos/octo/calc/issues/7"}
            return original(handler, method, body)

        fake._route = moved
        with pytest.raises(GitHubError, match="401"):
            client_for(fake).issue(7)
        assert [r.authorization for r in other.requests] == [""]
        fake._route = lambda h, m, b: ((301, {}, {"Location": f"{fake.url}/repos/octo/calc/issues/8"})
                                       if h.path.endswith("/7") else original(h, m, b))
        fake.add_issue(8, "same host", "body")
        assert client_for(fake).issue(7)["title"] == "same host"  # same host: token kept
        assert fake.requests[-1].authorization == f"Bearer {fake.token}"
    finally:
        other.stop()
