"""Run the agent's hooks in an isolated worker process, never in the kernel.

:class:`HookProcess` is one worker (``worker_main.py``) running one hooks source. The environment
starts it where the agent's own code runs (``env.start_python``): a bubblewrap sandbox of its own
on the local environment (no kernel process visible, nothing writable but a private /tmp, no
network), the session's container on docker. It is ``python -I -S`` (no site-packages), with an
environment built from nothing, resource limits it sets on itself and an import guard it installs
before it reads any hook code (standard library only), in its own process group. Each call has a
timeout; a crash, a timeout or an invalid reply kills it (and what it started).

:class:`HookClient` is the loop's ``Hooks``: it runs the hooks of the guard's last accepted
scaffold, validates what they return, and on any failure answers as if there were no hooks,
asks the guard to roll hooks.py back to the last version that worked, and lets the loop go on.
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
SMOKE_TIMEOUT = 3.0
MEMORY_BYTES = 1 << 30
CPU_SECONDS = 120
MAX_REPLY_BYTES = 16 << 20
MAX_TEXT_CHARS = 1_000_000
_ROLES = {"system", "user", "assistant", "tool"}
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


# -- validation of what hooks return --------------------------------------------------------------

def valid_text(value: Any, hook: str) -> str:
    if not isinstance(value, str):
        raise HookFailure(f"{hook} returned {type(value).__name__}, not a string")
    if len(value) > MAX_TEXT_CHARS:
        raise HookFailure(f"{hook} returned {len(value)} characters; the limit is {MAX_TEXT_CHARS}")
    return value


def valid_messages(value: Any, hook: str = "transform_messages") -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise HookFailure(f"{hook} must return a non-empty list of messages, got {type(value).__name__}")
    for index, message in enumerate(value):
        if not isinstance(message, dict):
            raise HookFailure(f"{hook}: message {index} is {type(message).__name__}, not an object")
        if message.get("role") not in _ROLES:
            raise HookFailure(f"{hook}: message {index} has role {message.get('role')!r}; expected one of {sorted(_ROLES)}")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise HookFailure(f"{hook}: message {index} content is {type(content).__name__}, not a string")
    if sum(len(m.get("content") or "") for m in value) > 20 * MAX_TEXT_CHARS:
        raise HookFailure(f"{hook} returned more than {20 * MAX_TEXT_CHARS} characters of messages")
    return value


_SAMPLE_MESSAGES = [
    {"role": "system", "content": "You are live-swe."},
    {"role": "user", "content": "Please solve this task."},
    {"role": "assistant", "content": "THOUGHT: look around.\n\n```bash\nls\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\ncalc.py\n</output>"},
]


def smoke_test(source: str, filename: str = "hooks.py", *, host, timeout: float = SMOKE_TIMEOUT) -> str | None:
    """Load ``source`` in a fresh worker started by ``host`` and call each hook it defines on sample
    inputs. Raises :class:`HooksUnavailable` where the environment cannot run hooks at all."""
    process = HookProcess(source, filename, host=host)
    try:
        hooks = process.start(timeout=max(timeout, START_TIMEOUT))
        if "transform_observation" in hooks:
            valid_text(process.call("transform_observation", [_SAMPLE_MESSAGES[-1]["content"], 1], timeout),
                       "transform_observation")
        if "transform_messages" in hooks:
            valid_messages(process.call("transform_messages", [_SAMPLE_MESSAGES, 1], timeout))
        if "after_step" in hooks:
            valid_text(process.call("after_step", [1, "ls", 0], timeout), "after_step")
    except HooksUnavailable:
        raise
    except HookFailure as exc:
        return str(exc)
    finally:
        process.close()
    return None


def passthrough_hooks(source: str) -> frozenset[str]:
    """Hooks that provably change nothing: ``return <first argument>`` for the transforms,
    ``return ""`` / ``return None`` for after_step, after an optional docstring, undecorated and
    defined once. The kernel reads the code (ast) but never runs it; calls to such hooks are
    skipped, which keeps the seed scaffold's per-step cost free of worker round trips.
    """
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    definitions: dict[str, list[ast.stmt]] = {}
    for node in tree.body:
        for name in _bound_names(node):
            definitions.setdefault(name, []).append(node)
    trivial = set()
    for name in ("transform_observation", "transform_messages", "after_step"):
        nodes = definitions.get(name, [])
        if len(nodes) != 1 or not isinstance(nodes[0], ast.FunctionDef) or nodes[0].decorator_list:
            continue
        function = nodes[0]
        body = function.body[1:] if _is_docstring(function.body[0]) else function.body
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            continue
        value = body[0].value
        params = [a.arg for a in function.args.args]
        if name == "after_step":
            if value is None or (isinstance(value, ast.Constant) and value.value in ("", None)):
                trivial.add(name)
        elif params and isinstance(value, ast.Name) and value.id == params[0]:
            trivial.add(name)
    return frozenset(trivial)


def _bound_names(node) -> list[str]:
    import ast

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    names = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            names.extend((alias.asname or alias.name).split(".")[0] for alias in child.names)
    return names


def _is_docstring(node) -> bool:
    import ast

    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


class HookClient:
    """The loop's ``Hooks``: the accepted hooks.py, run in a worker, with fallback on failure.

    The worker is started by the guard's environment. While hooks load or run, the guard keeps a
    mark of which hooks are live, so that a run that dies meanwhile resumes with the last good ones."""

    def __init__(self, guard, *, call_timeout: float | None = None):
        self.guard = guard
        self.call_timeout = call_timeout  # None: CALL_TIMEOUT
        self._process: HookProcess | None = None
        self._digest: str | None = None
        self._passthrough: tuple[str, frozenset[str]] = ("", frozenset())

    def _skippable(self, hook: str) -> bool:
        accepted = self.guard.hooks_source()
        if accepted is None:
            return False
        source = accepted[1]
        if self._passthrough[0] != source:
            self._passthrough = (source, passthrough_hooks(source))
        return hook in self._passthrough[1]

    def _worker(self) -> HookProcess | None:
        """The worker for the guard's accepted hooks, (re)started when they changed."""
        accepted = self.guard.hooks_source()
        if accepted is None:
            self._stop()
            return None
        filename, source = accepted
        digest = source_digest(source)
        if self.guard.hooks_disabled(digest):
            self._stop()
            return None
        if self._process is not None and self._digest == digest and self._process.alive:
            return self._process
        self._stop()
        process = HookProcess(source, filename, host=self.guard.env)
        self._digest = digest
        self.guard.hooks_live(digest)
        try:
            process.start()
        except HooksUnavailable as exc:
            self.guard.hooks_off(digest, str(exc))
            return None
        except HookFailure as exc:
            self._fail("load", str(exc))
            return None
        finally:
            self.guard.hooks_live(None)
        self._process = process
        return process

    def _call(self, hook: str, args: list[Any], validate, fallback: Any, step: int) -> Any:
        if self._skippable(hook):
            return fallback
        process = self._worker()
        if process is None or hook not in process.hooks:
            return fallback
        self.guard.hooks_live(self._digest)
        try:
            timeout = self.call_timeout if self.call_timeout is not None else CALL_TIMEOUT
            return validate(process.call(hook, args, timeout), hook)
        except HookFailure as exc:
            self._fail(hook, str(exc), step)
            return fallback
        finally:
            self.guard.hooks_live(None)

    def _fail(self, hook: str, why: str, step: int | None = None) -> None:
        digest = self._digest
        self._stop()
        if digest is not None:
            self.guard.hooks_failed(digest, hook, why, step)

    def _stop(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None

    # -- the Hooks protocol
    def transform_observation(self, observation: str, step: int) -> str:
        return self._call("transform_observation", [observation, step], valid_text, observation, step)

    def transform_messages(self, messages: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
        return self._call("transform_messages", [messages, step], valid_messages, messages, step)

    def after_step(self, step: int, command: str, returncode: int) -> str:
        return self._call("after_step", [step, command, returncode], valid_text, "", step)

    def attach(self, emit) -> None:
        """Nothing to log itself: the guard records fallbacks and restores."""

    def close(self, step: int | None = None) -> None:
        self._stop()
