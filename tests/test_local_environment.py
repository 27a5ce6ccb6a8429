"""The local environment's edges: commands get a closed stdin, a timeout kills the command's children
too, output is capped in memory with a note."""

from __future__ import annotations

import os
import time

import pytest
from conftest import live_processes, wait_until_no_process

from live_swe.environments.base import OUTPUT_CAP_BYTES
from live_swe.environments.local import LocalEnvironment

# 4. The local environment: closed stdin, a timeout kills the whole process group, an output cap.


@pytest.fixture
def open_stdin():
    """Our own stdin is a pipe nobody writes to or closes: a command that inherited it would hang."""
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)


def test_local_commands_get_a_closed_stdin(git_repo, open_stdin):
    env = LocalEnvironment(git_repo)
    started = time.monotonic()
    output = env.execute("cat; read -r line; echo read=$?", timeout=5)
    assert time.monotonic() - started < 3
    assert not output.timed_out and output.returncode == 0
    assert output.text.strip() == "read=1"  # end of input at once


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_local_timeout_kills_the_commands_children_too(git_repo, sandbox):
    token = f"30{os.getpid()}.{len(sandbox)}"  # a sleep nothing else on this machine runs
    env = LocalEnvironment(git_repo, sandbox=sandbox)
    try:
        output = env.execute(f"sleep {token} & wait", timeout=1)
        assert output.timed_out and output.returncode == -1
        assert wait_until_no_process(f"sleep\0{token}") == [], "the background child outlived the timed-out command"
    finally:
        env.close()
        for pid in live_processes(f"sleep\0{token}"):
            os.kill(pid, 9)


def test_local_output_is_capped_in_memory_with_a_note(git_repo):
    total = OUTPUT_CAP_BYTES + 3_000_000
    output = LocalEnvironment(git_repo).execute(f"head -c {total} /dev/zero | tr '\\0' x; echo", timeout=30)
    assert output.returncode == 0 and not output.timed_out
    kept, _, note = output.text.partition("\n[live-swe: ")
    assert kept == "x" * OUTPUT_CAP_BYTES
    assert note == f"{total + 1 - OUTPUT_CAP_BYTES} more bytes of output were dropped]"
