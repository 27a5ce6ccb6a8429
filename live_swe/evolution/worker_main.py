"""The hook worker: a separate process that runs the agent's hooks.py and nothing else.

Started by :mod:`live_swe.evolution.hook_worker` as ``python -I -S -B worker_main.py LIMITS``
with a scrubbed environment; it sets its resource limits first, and imports only the standard
library (no site-packages are even on its path). It speaks JSON lines on stdin/stdout:

    {"id": 1, "op": "load", "source": "...", "filename": "hooks.py"}
        -> {"id": 1, "ok": true, "hooks": ["after_step", ...]}
    {"id": 2, "op": "call", "hook": "transform_observation", "args": ["...", 3]}
        -> {"id": 2, "ok": true, "result": "..."}  or  {"id": 2, "ok": false, "error": "..."}

Standard output is the reply channel: anything a hook prints there corrupts the reply, and the
kernel treats that as a failed hook. The worker exits when its stdin closes.
"""

import json
import sys
import traceback
import types

HOOK_NAMES = ("transform_observation", "transform_messages", "after_step")


def _reply(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _error_text(limit=2000):
    text = traceback.format_exc()
    return text[-limit:]


def limit_resources(spec):
    """Lower this process's limits (address space, CPU s, file size, open files; no children)
    before any hook code is read. Hard limits too, so hooks cannot raise them again."""
    import resource

    memory, cpu, fsize, nofile = (int(x) for x in spec.split(","))
    for limit, value in (
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, fsize),
        (resource.RLIMIT_NOFILE, nofile),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),  # no child processes (not enforced for root)
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass


def die_with_parent():
    """If the kernel is killed (kill -9), stop too, even in the middle of a hook that sleeps."""
    import os
    import signal

    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass  # elsewhere: the worker still exits when its stdin closes between calls
    if os.getppid() != parent:
        sys.exit(0)


def main():
    die_with_parent()
    if len(sys.argv) > 1:
        limit_resources(sys.argv[1])
    module = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            _reply({"id": None, "ok": False, "error": "request is not JSON"})
            continue
        rid = request.get("id")
        op = request.get("op")
        if op == "load":
            try:
                module = types.ModuleType("live_swe_hooks")
                module.__file__ = request.get("filename", "hooks.py")
                code = compile(request["source"], module.__file__, "exec")
                exec(code, module.__dict__)
                hooks = [name for name in HOOK_NAMES if callable(module.__dict__.get(name))]
                _reply({"id": rid, "ok": True, "hooks": hooks})
            except BaseException:  # noqa: BLE001 - report everything, including SystemExit
                module = None
                _reply({"id": rid, "ok": False, "error": _error_text()})
        elif op == "call":
            hook = module.__dict__.get(request.get("hook")) if module is not None else None
            if not callable(hook):
                _reply({"id": rid, "ok": False, "error": f"no hook named {request.get('hook')!r} is loaded"})
                continue
            try:
                result = hook(*request.get("args", []))
                text = json.dumps({"id": rid, "ok": True, "result": result})
            except BaseException:  # noqa: BLE001
                _reply({"id": rid, "ok": False, "error": _error_text()})
                continue
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        else:
            _reply({"id": rid, "ok": False, "error": f"unknown op {op!r}"})


if __name__ == "__main__":
    main()
