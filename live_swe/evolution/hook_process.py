"""One hooks worker: the process that runs the agent's hooks, never in the kernel.

:class:`HookProcess` is one worker (``worker_main.py``) running one hooks source. The environment
starts it where the agent's own code runs (``env.start_python``): a bubblewrap sandbox of its own
on the local environment (no kernel process visible, nothing writable but a private /tmp, no
network), the session's container on docker. It is ``python -I -S`` (no site-packages), with an
environment built from nothing, resource limits it sets on itself and an import guard it installs
before it reads any hook code (standard library only), in its own process group. Each call has a
timeout; a crash, a timeout or an invalid reply kills it (and what it started).
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import time
from pathlib import Path
from typing import Any

from live_swe.errors import ToldToModel

WORKER_SCRIPT = Path(__file__).with_name("worker_main.py")

CALL_TIMEOUT = 5.0
START_TIMEOUT = 10.0
MEMORY_BYTES = 1 << 30
CPU_SECONDS = 120
MAX_REPLY_BYTES = 16 << 20
_NO_PYTHON = "LIVE-SWE-NO-PYTHON"


class HookFailure(ToldToModel):
    """The hooks crashed, hung or answered with something unusable; the message says which."""


class HooksUnavailable(HookFailure):
    """The environment cannot run hooks at all (an image without python3)."""


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


@functools.cache
def worker_source() -> str:
    return WORKER_SCRIPT.read_text()


class HookProcess:
    """One worker running one hooks source; ``host`` is the environment that starts it."""

    def __init__(self, source: str, filename: str = "hooks.py", *, host, memory: int = MEMORY_BYTES,
                 cpu: int = CPU_SECONDS):
        self.source = source
        self.filename = filename
        self.host = host
        self.memory = memory
        self.cpu = cpu
        self.hooks: tuple[str, ...] = ()
        self.pid = 0  # as the worker sees itself
        self._worker = None
        self._buffer = b""
        self._next_id = 0
        self._busy = True  # until it has answered: it may be running hook code

    @property
    def alive(self) -> bool:
        return self._worker is not None and self._worker.exit_status() is None

    def start(self, timeout: float = START_TIMEOUT) -> tuple[str, ...]:
        nonce = secrets.token_hex(8)
        # The worker lowers its own limits before it reads any hook code (a preexec_fn would do
        # it between fork and exec, which is unsafe in a threaded process such as the TUI).
        limits = f"{self.memory},{self.cpu},{16 << 20},64"
        self._worker = self.host.start_python(worker_source(), [limits, nonce])
        self._await_hello(nonce, time.monotonic() + timeout, timeout)
        reply = self._request({"op": "load", "source": self.source, "filename": self.filename}, timeout)
        if not reply.get("ok"):
            self.close()
            raise HookFailure(f"{self.filename} failed to load: {_last_line(reply.get('error'))}")
        hooks = reply.get("hooks")
        if not isinstance(hooks, list) or not all(isinstance(h, str) for h in hooks):
            self.close()
            raise HookFailure("the hook worker answered the load request with something unusable")
        self.hooks = tuple(hooks)
        return self.hooks

    def _await_hello(self, nonce: str, deadline: float, timeout: float) -> None:
        """Skip whatever came before the worker's greeting (a login shell's messages)."""
        marker = f"LIVE-SWE-HOOKS:{nonce}:"
        while True:
            line = self._read_line(deadline, timeout, "the start of the hook worker")
            if line.startswith(marker) and line[len(marker):].strip().isdigit():
                self.pid = int(line[len(marker):])
                self._worker.started(self.pid)
                return
            if line.strip() == _NO_PYTHON:
                self.close()
                raise HooksUnavailable("hooks cannot run in this environment: it has no python3")

    def call(self, hook: str, args: list[Any], timeout: float = CALL_TIMEOUT) -> Any:
        reply = self._request({"op": "call", "hook": hook, "args": args}, timeout)
        if not reply.get("ok"):
            raise HookFailure(f"{hook} raised {_last_line(reply.get('error'))}")
        return reply.get("result")

    def _request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        if not self.alive:
            raise HookFailure("the hook worker is not running" + self._stderr_tail())
        self._next_id += 1
        message["id"] = self._next_id
        self._busy = True
        try:
            self._worker.send((json.dumps(message) + "\n").encode())
        except OSError:
            tail = self._stderr_tail()
            self.close()
            raise HookFailure("the hook worker died" + tail) from None
        line = self._read_line(time.monotonic() + timeout, timeout, message.get("hook") or message["op"])
        try:
            reply = json.loads(line)
        except ValueError:
            self.close()
            raise HookFailure(f"the hook worker's reply is not JSON (did a hook print to standard output? use "
                              f"sys.stderr): {line[:200]!r}") from None
        if not isinstance(reply, dict) or reply.get("id") != message["id"]:
            self.close()
            raise HookFailure(f"the hook worker's reply is not the answer to the request: {line[:200]!r}")
        self._busy = False
        return reply

    def _read_line(self, deadline: float, timeout: float, what: str) -> str:
        assert self._worker is not None
        while b"\n" not in self._buffer:
            chunk = self._worker.recv(deadline)
            if chunk is None:
                self.close()
                raise HookFailure(f"{what} did not return within {timeout:g}s; the worker was stopped")
            if not chunk:
                code = _wait_status(self._worker)
                tail = self._stderr_tail()
                self.close()
                raise HookFailure(f"the hook worker exited (status {code}) during {what}{tail}")
            self._buffer += chunk
            if len(self._buffer) > MAX_REPLY_BYTES:
                self.close()
                raise HookFailure(f"{what} answered with more than {MAX_REPLY_BYTES} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace")

    def _stderr_tail(self) -> str:
        text = self._worker.stderr_tail() if self._worker is not None else ""
        return f"; its stderr ends: {text!r}" if text else ""

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close(busy=self._busy)
        self._buffer = b""
        self._busy = True


def _wait_status(worker, within: float = 2.0):
    """The exit status of a worker whose output ended (it may take a moment to be reported)."""
    deadline = time.monotonic() + within
    while True:
        code = worker.exit_status()
        if code is not None or time.monotonic() > deadline:
            return code
        time.sleep(0.01)


def _last_line(text: Any) -> str:
    lines = [line for line in str(text or "").strip().splitlines() if line.strip()]
    if not lines:
        return "(no error text)"
    # The exception line, and where in hooks.py it happened.
    frames = [line.strip() for line in lines if line.strip().startswith('File "')]
    location = f" ({frames[-1]})" if frames else ""
    return lines[-1].strip()[:500] + location[:300]


