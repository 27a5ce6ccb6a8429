"""What the gates decided about one step's scaffold changes: pure functions from what was found to a
:class:`Verdict`. Nothing here reads the tree, runs a gate or writes anything; the guard
(:mod:`live_swe.evolution.guard`) gathers the facts, asks these functions, and applies the verdict.

A step's changed paths are first sorted (:func:`classify`): junk (bytecode, removed silently),
strays (refused, with why), tools (each gated alone) and scaffold files (policy, prompts, hooks:
gated together). Each group is judged on its own and the verdicts are added up in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from live_swe.events import ToolChange
from live_swe.evolution.notes import note
from live_swe.evolution.tool_gates import name_problem
from live_swe.evolution.tree import Snapshot

_ALLOWED = "scaffold.yaml, prompts/, the hooks file and tools/NAME"


@dataclass
class Verdict:
    """Which changed files are accepted or refused, the refusals to log (files, why), the tool events
    and the notes for the model."""

    accepted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    rejects: list[tuple[list[str], str]] = field(default_factory=list)
    tool_events: list[ToolChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __add__(self, other: Verdict) -> Verdict:
        return Verdict(self.accepted + other.accepted, self.refused + other.refused, self.rejects + other.rejects,
                       self.tool_events + other.tool_events, self.notes + other.notes)


@dataclass
class Sorted:
    """A step's changed paths, by what may happen to them."""

    junk: list[str]
    strays: list[tuple[str, str]]  # (path, why it may not change)
    tools: dict[str, str]  # tool name -> path
    scaffold: list[str]


@dataclass(frozen=True)
class ToolCheck:
    """What the tool gates found for one changed file in the tools folder."""

    name: str
    rel: str
    deleted: bool = False
    problem: str | None = None  # why the gates refused it
    header: dict[str, str] | None = None  # its live-swe-tool header, when it passed
    was_registered: bool = False  # the accepted scaffold has a version of it


def is_junk(rel: str) -> bool:
    return "__pycache__" in rel.split("/") or rel.endswith(".pyc")


def classify(changed: list[str], current: Snapshot, tools_dir: str, hooks_names: set[str]) -> Sorted:
    """Sort changed paths into junk, strays, tools and scaffold files."""
    result = Sorted([], [], {}, [])
    for rel in changed:
        if is_junk(rel):
            result.junk.append(rel)
            continue
        why = _stray_reason(rel, current, tools_dir, hooks_names)
        if why:
            result.strays.append((rel, why))
        elif rel.split("/")[0] == tools_dir:
            result.tools[rel.split("/")[1]] = rel
        else:
            result.scaffold.append(rel)
    return result


def _stray_reason(rel: str, current: Snapshot, tools_dir: str, hooks_names: set[str]) -> str | None:
    """Why ``rel`` may not change in a scaffold, or None for a tool or scaffold file."""
    parts = rel.split("/")
    entry = current.get(rel)
    if any(part.startswith(".git") for part in parts):
        return "git metadata is not allowed in a scaffold"
    if entry is not None and entry.kind in ("link", "other"):
        return "links and special files are not allowed in a scaffold"
    if entry is not None and entry.kind == "file" and entry.data is None:
        return f"{entry.size} bytes is too large for a scaffold file"
    if parts[0] == tools_dir:
        if len(parts) == 1:
            return f"the {tools_dir}/ folder itself must stay as it is"
        if len(parts) == 2 and not parts[1].startswith(".") and (entry is None or entry.kind == "file"):
            return None
        return f"{tools_dir}/ holds tool files only (no folders or hidden files)"
    if parts[0] == "prompts" or rel == "scaffold.yaml" or rel in hooks_names:
        return None
    return f"not part of a scaffold (only {_ALLOWED} may change)"


def judge_strays(strays: list[tuple[str, str]], tool_names: dict[str, str], tools_dir: str, step: int) -> Verdict:
    """Strays are refused as one reject; one that is a tool (``tool_names``: path -> the name its
    header declares, e.g. a tool written as ../x) is named."""
    if not strays:
        return Verdict()
    files = [rel for rel, _ in strays]
    verdict = Verdict(refused=files, rejects=[(files, "; ".join(f"{rel}: {why}" for rel, why in strays))])
    plain = []
    for rel, why in strays:
        name = tool_names.get(rel)
        if name is None:
            plain.append(f"{rel}: {why}")
            continue
        why = name_problem(name) or f"a tool must be a file directly in {tools_dir}/ (this one is {rel})"
        verdict.tool_events.append(ToolChange(kind="refused", step=step, name=name, why=why))
        verdict.notes.append(note("stray_tool_refused", name=name, why=why))
    if plain:
        verdict.notes.append(note("strays_refused", items="; ".join(plain)))
    return verdict


def judge_tools(checks: list[ToolCheck], step: int) -> Verdict:
    """A tool that passed its gates is registered, one that failed is refused, a deleted one is
    simply no longer registered."""
    verdict = Verdict()
    for check in checks:
        if check.deleted:
            verdict.accepted.append(check.rel)
        elif check.problem:
            verdict.refused.append(check.rel)
            verdict.rejects.append(([check.rel], check.problem))
            verdict.tool_events.append(ToolChange(kind="refused", step=step, name=check.name, why=check.problem))
            undo = "restored to its registered version" if check.was_registered else "removed"
            verdict.notes.append(note("tool_refused", name=check.name, why=check.problem, undo=undo))
        else:
            header = check.header or {}
            verdict.accepted.append(check.rel)
            verdict.tool_events.append(ToolChange(kind="registered", step=step, name=check.name, why=""))
            verdict.notes.append(note("tool_registered", name=check.name, description=header.get("description", ""),
                                      usage=header.get("usage", check.name)))
    return verdict


def judge_seed_tools(problems: dict[str, str | None], tools_dir: str) -> Verdict:
    """The starting scaffold's tools (name -> why its gates refused it, or None): those that pass are
    registered, the others dropped (``refused`` holds their paths)."""
    verdict = Verdict()
    for name, why in problems.items():
        if not why:
            verdict.tool_events.append(ToolChange(kind="registered", step=0, name=name, why=""))
    for name, why in problems.items():
        if why:
            verdict.refused.append(f"{tools_dir}/{name}")
            verdict.tool_events.append(ToolChange(kind="refused", step=0, name=name, why=why))
            verdict.notes.append(note("seed_tool_refused", name=name, why=why))
    return verdict


def judge_scaffold(paths: list[str], refusal: str | None) -> Verdict:
    """Policy, prompts and hooks are accepted together, or refused together (``refusal``: the gates' why)."""
    if not paths:
        return Verdict()
    if refusal is None:
        return Verdict(accepted=list(paths))
    return Verdict(refused=list(paths), rejects=[(list(paths), refusal)],
                   notes=[note("change_refused", files=", ".join(paths), why=refusal)])


def refuse_changed(verdict: Verdict, before: Snapshot, after: Snapshot) -> Verdict:
    """Anything accepted that changed while the gates ran (a tool's --help writing files) is unchecked:
    refused, and restored."""
    files = [rel for rel in verdict.accepted if after.get(rel) != before.get(rel)]
    if not files:
        return verdict
    return Verdict([rel for rel in verdict.accepted if rel not in files], verdict.refused + files,
                   verdict.rejects + [(files, "changed while its gates were running")], verdict.tool_events,
                   verdict.notes + [note("changed_while_checked", files=", ".join(files))])
