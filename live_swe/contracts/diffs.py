"""The repository diff read as data: its file sections, its size, the lines it adds."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^diff --git a/(.*?) b/(.*)$", re.MULTILINE)


def sections(patch: str) -> dict[str, str]:
    """path -> that file's part of ``patch`` (a rename is listed under both names)."""
    found: dict[str, str] = {}
    starts = list(_HEADER.finditer(patch))
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(patch)
        text = patch[match.start():end]
        found[match.group(2)] = text
        if match.group(1) != match.group(2):
            found[match.group(1)] = text
    return found


def changed_lines(section: str) -> int:
    return sum(1 for line in section.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))


def added_text(section: str) -> str:
    return "\n".join(line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++ "))


def new_lines(before: str, after: str) -> str:
    """The lines ``after`` adds that ``before`` (the same file's earlier section) did not."""
    old = set(added_text(before).splitlines())
    return "\n".join(line for line in added_text(after).splitlines() if line not in old)


def graded_test_files(test_patch: str) -> tuple[str, ...]:
    """The files a benchmark's test patch writes: the tests it grades."""
    return tuple(sorted(sections(test_patch)))
