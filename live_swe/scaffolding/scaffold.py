"""Load a scaffold directory into an immutable :class:`Scaffold`.

Layout of a scaffold directory (the seed, a session's copy, or an archive node)::

    scaffold.yaml   policy
    prompts/*.j2    templates
    hooks.py        optional hook code (runs only in the hook worker)
    tools/          the agent's tools
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml
from pydantic import ValidationError

from live_swe.errors import UserError
from live_swe.scaffolding.files import NotARegularFile, read_regular, read_regular_text
from live_swe.scaffolding.policy import ScaffoldPolicy

POLICY_FILE = "scaffold.yaml"
PROMPTS_DIR = "prompts"
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_HEADER_KEYS = ("live-swe-tool", "description", "usage")


class ScaffoldError(UserError):
    """A scaffold directory that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class ToolInfo:
    name: str
    description: str
    usage: str
    path: Path


@dataclass(frozen=True)
class Scaffold:
    root: Path
    policy: ScaffoldPolicy
    templates: MappingProxyType  # prompt role -> template text
    tools: tuple[ToolInfo, ...] = field(default=())

    @property
    def tools_path(self) -> Path:
        return self.root / self.policy.tools_dir

    @property
    def hooks_path(self) -> Path | None:
        return self.root / self.policy.hooks if self.policy.hooks else None

    def template(self, role: str) -> str:
        return self.templates[role]


def load_policy(root: Path) -> ScaffoldPolicy:
    path = root / POLICY_FILE
    try:
        data = yaml.safe_load(read_regular_text(path)) or {}
    except FileNotFoundError as exc:
        raise ScaffoldError(f"{path}: missing; a scaffold needs a {POLICY_FILE}") from exc
    except (NotARegularFile, UnicodeDecodeError) as exc:
        raise ScaffoldError(f"{path}: cannot be read as a text file ({exc})") from exc
    except yaml.YAMLError as exc:
        raise ScaffoldError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ScaffoldError(f"{path}: must be a mapping of settings, got {type(data).__name__}")
    try:
        return ScaffoldPolicy.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors()
        )
        raise ScaffoldError(f"{path}: {problems}") from exc


def load_scaffold(root: Path) -> Scaffold:
    """Read and validate a scaffold directory. Raises :class:`ScaffoldError` with a clear message."""
    root = Path(root)
    if not root.is_dir():
        raise ScaffoldError(f"{root}: scaffold directory does not exist")
    policy = load_policy(root)
    templates: dict[str, str] = {}
    for role, filename in policy.prompts.model_dump().items():
        path = _inside(root / PROMPTS_DIR, filename)
        try:
            templates[role] = read_regular_text(path)
        except FileNotFoundError as exc:
            raise ScaffoldError(f"{path}: prompt template for {role!r} is missing") from exc
        except (NotARegularFile, UnicodeDecodeError) as exc:
            raise ScaffoldError(f"{path}: prompt template for {role!r} cannot be read as a text file ({exc})") from exc
    tools = tuple(discover_tools(root / policy.tools_dir))
    return Scaffold(root=root, policy=policy, templates=MappingProxyType(templates), tools=tools)


def _inside(base: Path, relative: str) -> Path:
    path = (base / relative).resolve()
    if base.resolve() not in path.parents:
        raise ScaffoldError(f"{relative}: prompt paths must stay inside {base}")
    return path


def read_tool_header(path: Path) -> dict[str, str] | None:
    """The three header fields of a tool file, or None when the header is absent or malformed."""
    try:
        head = read_regular(path, 8192).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = head.split("\n")
    if lines[-1] == "":
        lines.pop()  # the file ended with a newline
    lines = lines[:6]
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    fields: dict[str, str] = {}
    for key, line in zip(_HEADER_KEYS, lines, strict=False):
        text = _strip_comment(line)
        if text is None or not text.startswith(key + ":"):
            return None
        fields[key] = text[len(key) + 1 :].strip()
    if len(fields) != len(_HEADER_KEYS) or not all(fields.values()):
        return None
    return fields


def _strip_comment(line: str) -> str | None:
    stripped = line.strip()
    for marker in ("#", "//", "--", ";"):
        if stripped.startswith(marker):
            return stripped[len(marker) :].strip()
    return None


def discover_tools(tools_dir: Path) -> list[ToolInfo]:
    """Tools whose header is well formed, name matches the file, and which are executable.

    This is discovery only; the gates (syntax, --help run) are applied when a tool is registered.
    """
    if not tools_dir.is_dir():
        return []
    found = []
    for path in sorted(tools_dir.iterdir()):
        if not path.is_file() or not TOOL_NAME_RE.match(path.name) or not os.access(path, os.X_OK):
            continue
        header = read_tool_header(path)
        if header and header["live-swe-tool"] == path.name:
            found.append(ToolInfo(path.name, header["description"], header["usage"], path))
    return found
