"""What every command shares: turning known errors into a clear message and an exit code."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Any

import typer

from live_swe.errors import LiveSweError
from live_swe.infra.redact import redact

# Exit codes: 0 success / submitted (a batch: every instance ran, resolved or not), 1 the run ended
# without a submission, 2 bad input, 3 a batch or an evaluation in which some instance failed (an
# error, not an unresolved task), 130 interrupted (128 + the signal's number for SIGTERM, SIGHUP).
EXIT_NOT_SUBMITTED = 1
EXIT_BAD_INPUT = 2
EXIT_INSTANCE_ERRORS = 3
EXIT_INTERRUPTED = 130


def with_archive_scaffolds() -> None:
    """Let a command's scaffold (``--scaffold`` or the configured default, which ``scaffold promote``
    sets) be ``archive:NODE``. The Gödel engine resolves those references and fills them into the
    kernel's resolver when it is imported; the kernel never imports it, the command line does."""
    import godel.archive  # noqa: F401 - importing it registers archive:NODE


# Set by a command run with --json: a failure then also prints its one JSON object on stdout.
_json_failure: Callable[[], dict[str, Any]] | None = None


# C0 and C1 control characters except tab and newline (escape sequences start with ESC or CSI),
# and the bidirectional overrides that make text read differently than it runs.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with its control characters written out (``\\x1b``) instead of acted on by a terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def shown(text: str) -> str:
    """What may be printed of session text: redacted, and safe for a terminal."""
    return terminal_safe(redact(text))


def shown_exact(text: str) -> str:
    """Text whose bytes matter (a patch): redacted; written out only when the output is a terminal."""
    text = redact(text)
    return terminal_safe(text) if sys.stdout.isatty() else text


def print_json(data: Any) -> None:
    """One JSON document on stdout, redacted (``json.dumps`` already escapes control characters)."""
    import json

    print(redact(json.dumps(data, default=str)))


def fail_as_json(fields: Callable[[], dict[str, Any]]) -> None:
    """From now on, ``fail`` also prints ``{**fields(), "status": "error", "message": ...}``."""
    global _json_failure
    _json_failure = fields


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    message = redact(message)  # a token or key must never reach a log or the action's outputs
    print(f"live-swe: error: {terminal_safe(message)}", file=sys.stderr)
    if _json_failure is not None:
        print_json({**_json_failure(), "status": "error", "message": message})
    raise typer.Exit(code)


def friendly(func: Callable[..., Any]) -> Callable[..., Any]:
    """live-swe's errors (the ``LiveSweError`` tree) become one line on stderr and exit code 2, never a
    traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except LiveSweError as exc:
            fail(str(exc))

    return wrapper


CONTRACT_HELP = ("A contract file (YAML) whose rules are added to the built-in contract, the user's and the "
                 "repository's; repeatable. See the README's contract format.")
