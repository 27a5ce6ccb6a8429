"""Prompt templates render in a sandboxed Jinja environment with strict undefined.

The agent can rewrite templates, so they are untrusted: the sandbox forbids attribute tricks, and
strict undefined turns a misspelt variable into an error at the gate instead of an empty prompt.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


@lru_cache(maxsize=1)
def _environment() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=False, autoescape=False)


@lru_cache(maxsize=256)
def _compile(source: str):
    return _environment().from_string(source)


def render(source: str, context: dict[str, Any]) -> str:
    """Render template text; raises :class:`jinja2.TemplateError` subclasses on any problem."""
    return _compile(source).render(**context).strip()


__all__ = ["TemplateError", "render"]
