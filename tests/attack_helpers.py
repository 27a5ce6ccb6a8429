"""Shared by the attack tests (no tests here): a git directory booby-trapped with every program a
repository's config, attributes and hooks can make git run, each leaving its name in a witness file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-push", "post-checkout", "post-merge",
         "pre-auto-gc", "reference-transaction", "post-index-change", "post-rewrite", "pre-rebase")
CLI = [sys.executable, "-m", "live_swe.cli.main"]


def cli(*args: str, timeout: float = 180, env: dict | None = None, cwd: Path | None = None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def plant_traps(git_dir: Path, witness: Path | None = None) -> Path:
    """Write into ``git_dir`` (a repository's ``.git``, or a bare repository) hooks, an fsmonitor,
    filter/diff/merge drivers for every path, an external diff, a pager, an editor, a credential
    helper, an askpass, an ssh command and a signing program — some through an included file. Each
    appends its name (and, for hooks, the environment it saw) to ``witness``, which is returned."""
    witness = witness or git_dir / "trap-witness"
    w = str(witness)

    def program(name: str, then: str = "") -> str:
        return f"echo {name} >> '{w}'; {then}".rstrip()

    settings = {
        "core.hooksPath": str(git_dir / "trap-hooks"),
        "core.pager": program("pager", "cat"),
        "core.editor": program("editor", "true"),
        "core.askPass": program("askpass", "echo x"),
        "core.sshCommand": program("ssh", "false"),
        "diff.external": program("external", "true"),
        "diff.trap.textconv": program("textconv", "cat"),
        "diff.trap.command": program("diffcmd", "true"),
        "merge.trap.driver": program("merge", "false"),
        "credential.helper": "!" + program("credential", "true"),
        "commit.gpgSign": "true",
        "gpg.program": program("gpg", "false"),
        "include.path": str(git_dir / "trap-include.cfg"),
    }
    included = {  # an include is followed like the file itself
        "core.fsmonitor": program("fsmonitor", "exit 1"),
        "filter.trap.clean": program("clean", "cat"),
        "filter.trap.smudge": program("smudge", "cat"),
    }
    for key, value in settings.items():
        subprocess.run(["git", "config", "--file", str(git_dir / "config"), key, value], check=True)
    for key, value in included.items():
        subprocess.run(["git", "config", "--file", str(git_dir / "trap-include.cfg"), key, value], check=True)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text("* filter=trap diff=trap merge=trap\n")
    for folder in (git_dir / "hooks", git_dir / "trap-hooks"):
        folder.mkdir(exist_ok=True)
        for name in HOOKS:
            hook = folder / name
            hook.write_text(f"#!/bin/sh\necho hook:{name} >> '{w}'\nenv >> '{w}'\nexit 0\n")
            hook.chmod(0o755)
    return witness


def sprung(witness: Path) -> str:
    """What ran (empty when nothing did)."""
    return witness.read_text() if witness.exists() else ""
