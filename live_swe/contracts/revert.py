"""Put repository files back as they were before a step: as in the starting commit, with the
step's earlier changes to them (their sections of the previous patch) applied again."""

from __future__ import annotations

import base64
import shlex

from live_swe.environments.base import Environment
from live_swe.infra.git import SHELL_GIT as GIT
from live_swe.infra.git import shell_prelude


def restore_command(base: str, paths: list[str], earlier_sections: list[str]) -> str:
    parts = [shell_prelude().rstrip()]
    for path in paths:
        q, spec = shlex.quote(path), shlex.quote(f"{base}:{path}")
        # the file goes first: a link put in its place must not be written through
        parts.append(f'rm -rf -- {q}; if {GIT} cat-file -e {spec} 2>/dev/null; then mkdir -p -- "$(dirname -- {q})" && '
                     f'{GIT} cat-file blob {spec} > {q}; fi')
    patch = "".join(earlier_sections)
    if patch.strip():
        blob = base64.b64encode(patch.encode()).decode()
        parts.append(f"printf %s {shlex.quote(blob)} | base64 -d | {GIT} apply --binary --whitespace=nowarn -")
    return "\n".join(parts)


def restore_files(env: Environment, base: str, paths: list[str], earlier_sections: list[str]) -> str | None:
    """Restore ``paths``; the error text, or None."""
    out = env.execute(restore_command(base, paths, earlier_sections), timeout=120)
    return None if out.returncode == 0 else out.text.strip()[:300] or f"exit status {out.returncode}"
