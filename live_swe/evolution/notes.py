"""The notes the guard (and the hook fallback) append to the model's next observation, in one table:
``note(kind, **fields)``. How changes are worded for people is in :mod:`live_swe.wording`."""

from __future__ import annotations

NOTES = {
    # a step's changes
    "tool_registered": "Scaffold: tool `{name}` registered: {description} (usage: `{usage}`). It is on your PATH "
                       "from now on.",
    "tool_refused": "Scaffold: tool `{name}` refused: {why}. The file was {undo}; fix it and write it again.",
    "stray_tool_refused": "Scaffold: tool `{name}` refused: {why}. The file was removed.",
    "strays_refused": "Scaffold: refused {items}. Undone (added files removed, changed ones restored).",
    "change_refused": "Scaffold: change to {files} refused: {why}. The files were restored to the last accepted "
                      "version.",
    "changed_while_checked": "Scaffold: {files} changed while being checked and was restored.",
    "change_accepted": "Scaffold: change to {files} accepted (commit {rev}); it takes effect from your next step.",
    # the starting scaffold and resume
    "seed_tool_refused": "Scaffold: the tool `{name}` from the starting scaffold was not registered: {why}.",
    "resume_discarded": "Scaffold: on resume, unchecked changes to {files} were discarded; the scaffold is the last "
                        "accepted version.",
    "resume_foreign_commits": "Scaffold: on resume, commits written straight into the scaffold history were "
                              "discarded ({files}); the scaffold is the last accepted version.",
    # hooks
    "hooks_off": "Scaffold: {why}, so hooks are off for this run; the run goes on.",
    "hooks_failed_no_fallback": "Scaffold: {filename} failed ({hook}: {why}); there is no earlier version to fall "
                                "back to, so hooks are off for the rest of this run.",
    "hooks_rolled_back": "Scaffold: {filename} failed ({hook}: {why}). It was rolled back to the last version that "
                         "worked ({origin}), committed as {rev}; the run goes on.",
}


def note(kind: str, **fields: object) -> str:
    return NOTES[kind].format(**fields)
