"""The environment protocol.

An environment runs one shell command at a time in the repository, with fresh-shell semantics
(no state carries from one command to the next except the file system), and moves files in and
out. ``extra_env`` is set for every command (``LIVE_SWE_SCAFFOLD``, ``PATH`` additions).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from live_swe.errors import InfrastructureError

# Output kept in memory per command; the rest is dropped with a note (truncation for the model
# happens later, by the scaffold's policy).
OUTPUT_CAP_BYTES = 2_000_000


class EnvironmentError_(InfrastructureError):
    """The environment itself failed (engine down, image missing, not a repository...).

    Named with a trailing underscore so it never shadows the builtin ``EnvironmentError``.
    """


@dataclass(frozen=True)
class Output:
    text: str
    returncode: int
    timed_out: bool = False


@runtime_checkable
class Environment(Protocol):
    # The repository's path as commands see it (a host path, or e.g. /testbed in a container).
    repo_dir: str
    # Where the session's scaffold appears to commands ($LIVE_SWE_SCAFFOLD).
    scaffold_dir: str

    def execute(self, command: str, timeout: float) -> Output: ...

    def copy_in(self, src: Path, dest: str) -> None: ...

    def copy_out(self, src: str, dest: Path) -> None: ...

    def close(self) -> None: ...

    def interrupt(self) -> None:
        """Kill the running command from another thread (a front end stopping); no-op when idle."""
