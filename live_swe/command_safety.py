"""Which commands only read: the read-only approval mode lets them run without asking, and the
contract engine does not look for changes after them.

A command passes only when every part of it is a known reader: each segment of a pipeline or
``&&`` / ``||`` / ``;`` list starts with a read-only program used without writing options, and
there is no redirection, subshell, command substitution, background job or variable assignment.
No ``$`` at all (``${_@P}`` runs a command through a prompt expansion, ``$PPID`` reaches the kernel's
environment), no backtick, and every path stays in the repository: an absolute path elsewhere, a
``..`` that climbs out, ``~``, or a link in the repository pointing out makes the reader ask.
Anything we cannot parse is not harmless: the person is asked.
"""

from __future__ import annotations

import os
import shlex

READERS = {
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "pwd", "tree", "stat",
    "file", "du", "df", "which", "echo", "nl", "diff", "cmp", "basename", "dirname", "realpath", "date",
    "whoami", "uname", "true", "sort", "uniq", "cut", "tr", "column",
}
GIT_READERS = {"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "grep", "shortlog", "describe"}
GIT_BRANCH_LISTING = {"-a", "-r", "-l", "--list", "-v", "-vv", "--all", "--remotes", "--show-current"}
FIND_WRITERS = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
# Options that make a reader write a file or run another program. Long options also count when
# abbreviated (git and GNU getopt accept any unambiguous prefix: --out, --compress).
WRITING_OPTIONS = {
    "sort": ("-o", "--output", "--compress-program"),
    "rg": ("--pre", "--pre-glob"),
    "tree": ("-o",),
    "date": ("-s", "--set"),
    "file": ("-C", "--compile"),
}
GIT_WRITING_OPTIONS = ("-o", "--output", "--ext-diff", "-O", "--open-files-in-pager")
SEPARATORS = {"|", "&&", "||", ";"}
# Shell syntax that can write files, run hidden commands or read the environment, wherever it appears.
FORBIDDEN_TEXT = ("$", "`", "<(", ">(")


def is_harmless(command: str, repo: str | os.PathLike | None = None) -> bool:
    """Whether ``command`` only reads, inside ``repo`` (where it runs; without one, any absolute
    path counts as outside)."""
    if any(marker in command for marker in FORBIDDEN_TEXT):
        return False
    try:
        lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return False  # unbalanced quotes
    if not tokens:
        return False
    segment: list[str] = []
    for token in tokens + [";"]:
        if token in SEPARATORS:
            if segment and not (_harmless_segment(segment) and _stays_inside(segment[1:], repo)):
                return False
            segment = []
        elif _is_operator(token):
            return False  # redirections (> >> < &>), background (&), subshells ( )
        else:
            segment.append(token)
    return True


def _is_operator(token: str) -> bool:
    return bool(token) and all(ch in "();<>|&" for ch in token)


def _harmless_segment(words: list[str]) -> bool:
    program, args = words[0], words[1:]
    if "=" in program or "/" in program:
        return False  # VAR=value prefixes, or a script by path
    if program == "git":
        return _harmless_git(args)
    if program not in READERS or _writes(args, ("--output", *WRITING_OPTIONS.get(program, ()))):
        return False
    if program == "find":
        return not any(a in FIND_WRITERS for a in args)
    if program == "uniq":
        return len([a for a in args if not a.startswith("-")]) <= 1  # a second name is an output file
    return True


def _writes(args: list[str], options: tuple[str, ...]) -> bool:
    """Whether any argument is one of ``options``: a short one alone or in a cluster (``-Orm``,
    ``-us``), a long one whole, with ``=value``, or abbreviated."""
    for arg in args:
        if arg == "--" or not arg.startswith("-") or arg == "-":
            continue
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if any(len(name) > 3 and option.startswith("--") and option.startswith(name) for option in options):
                return True
        elif any(len(option) == 2 and option[1] in arg[1:] for option in options):
            return True
    return False


def _harmless_git(args: list[str]) -> bool:
    if not args:
        return False
    sub, rest = args[0], args[1:]
    if _writes(rest, GIT_WRITING_OPTIONS):
        return False
    if sub == "branch":
        return all(a in GIT_BRANCH_LISTING for a in rest)
    if sub == "stash":
        return rest[:1] == ["list"] or rest[:1] == ["show"]
    return sub in GIT_READERS


def _stays_inside(args: list[str], repo: str | os.PathLike | None) -> bool:
    """No argument names a path outside the repository (an option's value included: ``--file=/x``, ``-f/x``)."""
    root = os.path.realpath(repo) if repo is not None and os.path.isdir(repo) else None
    for arg in args:
        value = arg
        if arg.startswith("-"):
            if "=" in arg:
                value = arg.split("=", 1)[1]
            elif arg.startswith("--"):
                continue
            else:
                value = arg[2:]  # a short option's attached value
        if value and _leaves(value, repo, root):
            return False
    return True


def _leaves(path: str, repo: str | os.PathLike | None, root: str | None) -> bool:
    if path.startswith("~"):
        return True
    if root is not None:  # the repository is here: follow links too
        resolved = os.path.realpath(os.path.join(root, path))
        return resolved != root and not resolved.startswith(root.rstrip(os.sep) + os.sep)
    if path.startswith("/"):
        inside = repo is not None and os.path.normpath(path).startswith(str(repo).rstrip("/") + "/")
        return not inside
    return ".." in os.path.normpath(path).split("/")
