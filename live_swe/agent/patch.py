"""The submitted patch: the repository's diff against the starting commit, new files included.

Computed inside the environment with a throwaway index, so the user's own index is untouched.
Anything under live-swe's own folders is excluded: tools and scaffold never leak into a patch.
git runs there under the kernel's rules (``live_swe.infra.git.shell_prelude``): the repository's
hooks, fsmonitor, filters and external diff never run, whatever its ``.git/config`` says.
"""

from __future__ import annotations

import shlex

from live_swe.environments.base import Environment, EnvironmentError_
from live_swe.infra.git import PATCH_EXCLUDES, shell_prelude
from live_swe.infra.git import SHELL_GIT as GIT


def base_commit(env: Environment) -> str:
    out = env.execute(shell_prelude() + f"{GIT} rev-parse --verify HEAD", timeout=30)
    if out.returncode != 0:
        raise EnvironmentError_(
            f"{env.repo_dir} is not a git repository with at least one commit "
            f"(git said: {out.text.strip()[:200]}). Run `git init && git add -A && git commit -m init` there first."
        )
    return out.text.strip().splitlines()[-1]


def diff_command(base: str, extra_excludes: tuple[str, ...] = (), index_file: str | None = None) -> str:
    """A shell command printing the patch. The scratch index starts as a copy of the repository's
    own (so git re-reads only files whose stat changed, not every file), or from HEAD when there is
    none or the copy is unusable. The copy keeps the index file's time (``cp -p``): git trusts the
    stat of entries older than the index file, so a fresh time would hide a change made in the
    second the real index was written (same size, same mtime second). ``index_file`` keeps it between calls (a container's /tmp), so
    each later diff is cheaper."""
    excludes = " ".join(shlex.quote(f":(exclude,glob){p}") for p in PATCH_EXCLUDES + extra_excludes)
    idx = shlex.quote(index_file) if index_file else '"$(mktemp -u)"'
    cleanup = "" if index_file else 'rm -f "$idx"; '
    return shell_prelude() + (
        f'real="$({GIT} rev-parse --git-path index)" && idx={idx} && '
        f'{{ [ -f "$idx" ] || cp -p "$real" "$idx" 2>/dev/null || GIT_INDEX_FILE="$idx" {GIT} read-tree HEAD; }} && '
        'export GIT_INDEX_FILE="$idx" && '
        f'{{ {GIT} add -A . 2>/dev/null || {{ rm -f "$idx" && {GIT} read-tree HEAD && {GIT} add -A .; }}; }} '
        f"&& {GIT} -c core.quotepath=off diff --cached --binary --no-ext-diff --no-textconv {shlex.quote(base)} "
        f"-- . {excludes}; "
        f"rc=$?; {cleanup}exit $rc"
    )


def repository_patch(env: Environment, base: str, extra_excludes: tuple[str, ...] = (),
                     index_file: str | None = None) -> str:
    out = env.execute(diff_command(base, extra_excludes, index_file), timeout=120)
    if out.returncode != 0:
        raise EnvironmentError_(f"could not compute the patch in {env.repo_dir}: {out.text.strip()[:500]}")
    return out.text
