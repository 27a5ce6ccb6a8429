"""What every command shares: turning known errors into a clear message and an exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import typer

# Exit codes: 0 success / submitted, 1 the run ended without a submission, 2 bad input.
EXIT_NOT_SUBMITTED = 1
EXIT_BAD_INPUT = 2


def _known_errors() -> tuple[type[BaseException], ...]:
    from live_swe.config import ConfigError
    from live_swe.environments.base import EnvironmentError_
    from live_swe.models.base import ModelError
    from live_swe.scaffolding.scaffold import ScaffoldError
    from live_swe.session.store import SessionError

    errors: list[type[BaseException]] = [ConfigError, EnvironmentError_, ModelError, ScaffoldError, SessionError]
    try:
        from live_swe.errors import UserError

        errors.append(UserError)
    except ImportError:
        pass
    return tuple(errors)


# Set by a command run with --json: a failure then also prints its one JSON object on stdout.
_json_failure: Callable[[], dict[str, Any]] | None = None
_clean: Callable[[str], str] = str  # what every error message goes through before it is shown


def fail_as_json(fields: Callable[[], dict[str, Any]]) -> None:
    """From now on, ``fail`` also prints ``{**fields(), "status": "error", "message": ...}``."""
    global _json_failure
    _json_failure = fields


def clean_messages(clean: Callable[[str], str]) -> None:
    """From now on, error messages go through ``clean`` (e.g. redacting secrets) before they are shown."""
    global _clean
    _clean = clean


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    message = _clean(message)
    print(f"live-swe: error: {message}", file=sys.stderr)
    if _json_failure is not None:
        import json

        print(json.dumps({**_json_failure(), "status": "error", "message": message}))
    raise typer.Exit(code)


def friendly(func: Callable[..., Any]) -> Callable[..., Any]:
    """Known errors become one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except _known_errors() as exc:
            fail(str(exc))

    return wrapper
