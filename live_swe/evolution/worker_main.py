"""The hook worker: a separate process that runs the agent's hooks.py and nothing else.

Started by :mod:`live_swe.evolution.hook_process` through the environment, confined like the agent's
commands (a bubblewrap sandbox on the local environment, the session's container on docker), as
``python3 -I -S -B -c <this file> LIMITS NONCE``. It announces itself (``LIVE-SWE-HOOKS:NONCE:PID``,
so whatever a login shell printed before it is skipped), sets its resource limits, allows only
standard-library imports from then on, and speaks JSON lines on stdin/stdout:

    {"id": 1, "op": "load", "source": "...", "filename": "hooks.py"}
        -> {"id": 1, "ok": true, "hooks": ["after_step", ...]}
    {"id": 2, "op": "call", "hook": "transform_observation", "args": ["...", 3]}
        -> {"id": 2, "ok": true, "result": "..."}  or  {"id": 2, "ok": false, "error": "..."}

Standard output is the reply channel: anything a hook prints there corrupts the reply, and the
kernel treats that as a failed hook. The worker exits when its stdin closes.
It runs on whatever python3 an image has (3.6 and later): no newer syntax here.
"""

import importlib.machinery
import json
import os
import sys
import traceback
import types

HOOK_NAMES = ("transform_observation", "transform_messages", "after_step")
_NOT_STDLIB = "hooks may import only the standard library; {!r} is not part of it"


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
        (resource.RLIMIT_NPROC, 0),  # no child processes (not enforced for root: the sandbox is)
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass


def die_with_parent():
    """If the process that started the worker dies, stop too, even in the middle of a hook."""
    import signal

    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass  # elsewhere: the worker still exits when its stdin closes between calls
    if os.getppid() != parent:
        sys.exit(0)
    try:
        os.setsid()  # its own process group: the kernel stops whatever a hook started with it
    except OSError:
        pass


class StandardLibraryOnly:
    """A meta-path finder placed first: a top-level module is importable only from the standard
    library's own folders (and, where Python lists them, only by a standard-library name), so
    neither ``exec("import yaml")`` nor a path a hook adds can bring anything else in."""

    def __init__(self, roots):
        self.roots = list(roots)
        self.names = getattr(sys, "stdlib_module_names", None)  # Python 3.10 and later

    def allowed(self, top):
        return (top in sys.builtin_module_names or self.names is None or top in self.names
                or top.startswith("_sysconfigdata"))  # named after the platform: never in the list

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None  # a submodule of a package that was allowed
        if name in sys.builtin_module_names:
            return None
        spec = importlib.machinery.FrozenImporter.find_spec(name) if self.allowed(name) else None
        if spec is None and self.allowed(name):
            spec = importlib.machinery.PathFinder.find_spec(name, self.roots)
        if spec is None:
            raise ModuleNotFoundError(_NOT_STDLIB.format(name), name=name)
        return spec

    def outsider(self):
        """A loaded module that is not the standard library's (a guard removed by a hook), or None."""
        for name, module in list(sys.modules.items()):
            spec = getattr(module, "__spec__", None)
            origin = getattr(spec, "origin", None)
            if not origin or origin in ("built-in", "frozen") or not os.path.isabs(origin):
                continue
            top = name.partition(".")[0]
            if not self.allowed(top) or not any(origin.startswith(root + os.sep) for root in self.roots):
                return name
        return None


def confine_imports():
    """From here on only the standard library imports (``-S`` already left site-packages out)."""
    roots = [p for p in sys.path if p and os.path.isabs(p) and "-packages" not in p]
    sys.path[:] = roots
    guard = StandardLibraryOnly(roots)
    sys.meta_path.insert(0, guard)
    return guard


def main():
    die_with_parent()
    args = sys.argv[1:]
    if len(args) > 1:
        sys.stdout.write(f"LIVE-SWE-HOOKS:{args[1]}:{os.getpid()}\n")
        sys.stdout.flush()
    if args:
        limit_resources(args[0])
    guard = confine_imports()
    module = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            _reply({"id": None, "ok": False, "error": "request is not JSON"})
            continue
        op = request.get("op")
        if op == "load":
            module = _load(request, guard)
        elif op == "call":
            _call(request, module, guard)
        else:
            _reply({"id": request.get("id"), "ok": False, "error": f"unknown op {op!r}"})


def _load(request, guard):
    """Run the hooks source as a module and answer with the hooks it defines; None when it fails."""
    rid = request.get("id")
    try:
        module = types.ModuleType("live_swe_hooks")
        module.__file__ = request.get("filename", "hooks.py")
        code = compile(request["source"], module.__file__, "exec")
        exec(code, module.__dict__)
        outsider = guard.outsider()
        if outsider:
            raise ImportError(_NOT_STDLIB.format(outsider))
        hooks = [name for name in HOOK_NAMES if callable(module.__dict__.get(name))]
        _reply({"id": rid, "ok": True, "hooks": hooks})
        return module
    except BaseException:  # noqa: BLE001 - report everything, including SystemExit
        _reply({"id": rid, "ok": False, "error": _error_text()})
        return None


def _call(request, module, guard):
    rid = request.get("id")
    hook = module.__dict__.get(request.get("hook")) if module is not None else None
    if not callable(hook):
        _reply({"id": rid, "ok": False, "error": "no hook named {!r} is loaded".format(request.get("hook"))})
        return
    try:
        result = hook(*request.get("args", []))
        outsider = guard.outsider()
        if outsider:
            raise ImportError(_NOT_STDLIB.format(outsider))
        text = json.dumps({"id": rid, "ok": True, "result": result})
    except BaseException:  # noqa: BLE001
        _reply({"id": rid, "ok": False, "error": _error_text()})
        return
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
