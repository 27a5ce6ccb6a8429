"""The gates a tool passes before it is registered.

A tool is an executable file ``tools/NAME`` whose first comment lines (after any ``#!`` line) are
``live-swe-tool: NAME``, ``description: ONE LINE`` and ``usage: NAME ARGS...``. The gates, in
order: the name, the file itself, the header, the exec bit, a tree-sitter syntax check (Python,
bash, JavaScript), and ``NAME --help`` run in the environment within a short timeout.
Each gate answers with ``None`` (passed) or one sentence saying what is wrong and what to do.
"""

from __future__ import annotations

import os
import shlex
import stat
from functools import cache
from pathlib import Path

from live_swe.environments.base import Environment
from live_swe.evolution.tree import MAX_FILE_BYTES
from live_swe.scaffolding.files import read_regular
from live_swe.scaffolding.scaffold import TOOL_NAME_RE, read_tool_header

HELP_TIMEOUT = 10.0

# Names a tool may not take: the kernel's own command, shell builtins and the core utilities a
# model reaches for without thinking. Shadowing one would change what familiar commands do.
RESERVED_NAMES = frozenset(
    """
    live-swe live_swe submit
    alias bg bind break builtin caller cd command compgen complete continue declare dirs disown echo
    enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout
    mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test
    time times trap true type typeset ulimit umask unalias unset wait
    sh bash dash zsh ksh fish env nohup timeout xargs sudo su
    ls cp mv rm rmdir mkdir ln touch cat tac head tail less more chmod chown chgrp stat file find
    locate which whereis realpath readlink basename dirname pwd du df tree
    grep egrep fgrep rg ag sed awk gawk cut tr sort uniq wc tee paste join comm diff cmp patch
    split nl fold fmt column od xxd hexdump strings base64 md5sum sha1sum sha256sum
    tar gzip gunzip zip unzip xz bzip2 curl wget ssh scp rsync
    ps top kill pkill killall sleep date cal id whoami hostname uname yes seq expr bc
    git make cmake gcc cc g++ clang ld python python2 python3 pip pip3 pytest tox uv pipx
    node npm npx yarn pnpm deno ruby gem perl php java javac go cargo rustc
    vi vim nano emacs ed
    """.split()
)

_LANGUAGE_BY_INTERPRETER = {
    "python": "python", "python3": "python", "python2": "python", "pypy3": "python",
    "bash": "bash", "sh": "bash", "dash": "bash",
    "node": "javascript", "nodejs": "javascript",
}


def name_problem(name: str) -> str | None:
    if not name:
        return "a tool needs a name"
    if "/" in name or "\\" in name or ".." in name or name.startswith("."):
        return (f"the name {name!r} contains a path separator or '..'; a tool is a plain file directly "
                "in tools/, named with letters, digits, '-' and '_'")
    if not TOOL_NAME_RE.match(name):
        return (f"the name {name!r} is not allowed; use 1-64 letters, digits, '-' and '_', "
                "starting with a letter or digit")
    if name in RESERVED_NAMES:
        return f"the name {name!r} clashes with the shell command {name!r}; choose a name of its own"
    return None


def interpreter_language(first_line: str) -> str | None:
    """The language a ``#!`` line runs (None: no shebang or an interpreter we do not parse)."""
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].split()
    if not words:
        return None
    program = os.path.basename(words[0])
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        program = os.path.basename(rest[0]) if rest else ""
    return _LANGUAGE_BY_INTERPRETER.get(program) or _LANGUAGE_BY_INTERPRETER.get(program.rstrip("0123456789."))


def tool_language(source: bytes) -> str | None:
    first = source.split(b"\n", 1)[0].decode("utf-8", "replace")
    if not first.startswith("#!"):
        return "bash"  # without a shebang, bash runs the file as a shell script
    return interpreter_language(first)


@cache
def _parser(language: str):
    from tree_sitter import Language, Parser

    if language == "python":
        import tree_sitter_python as grammar
    elif language == "bash":
        import tree_sitter_bash as grammar
    elif language == "javascript":
        import tree_sitter_javascript as grammar
    else:
        raise ValueError(f"no grammar for {language!r}")
    return Parser(Language(grammar.language()))


def syntax_problem(source: bytes, language: str) -> str | None:
    """Where tree-sitter finds the first syntax error, or None."""
    if language == "javascript" and source.startswith(b"#!"):
        source = b"//" + source[2:]  # node accepts a shebang line; the grammar version may not
    tree = _parser(language).parse(source)
    if not tree.root_node.has_error:
        return None
    node = _first_error(tree.root_node)
    if node is None:
        return f"{language} syntax error"
    line = node.start_point[0] + 1
    text = source.splitlines()[line - 1].decode("utf-8", "replace").strip() if line <= len(source.splitlines()) else ""
    what = f"missing {node.type!r}" if node.is_missing else "unexpected text"
    return f"{language} syntax error at line {line} ({what}): {text[:120]!r}"


def _first_error(node):
    if node.is_error or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing or child.is_error:
            found = _first_error(child)
            if found is not None:
                return found
    return None


def header_problem(path: Path, name: str) -> str | None:
    header = read_tool_header(path)
    if header is None:
        return ("its first comment lines (after any #! line) must be exactly `live-swe-tool: "
                f"{name}`, `description: ONE LINE` and `usage: {name} ARGS...`, each in a comment")
    if header["live-swe-tool"] != name:
        return (f"its header says `live-swe-tool: {header['live-swe-tool']}` but the file is named "
                f"{name!r}; the two must be the same")
    usage = header["usage"]
    if usage.split()[0] != name:
        return f"its usage line must start with the tool's name (`usage: {name} ARGS...`), not {usage!r}"
    return None


def static_problem(path: Path, name: str) -> str | None:
    """Every gate that needs no environment: name, file, size, exec bit, header, syntax."""
    problem = name_problem(name)
    if problem:
        return problem
    try:
        info = path.lstat()
    except FileNotFoundError:
        return "the file does not exist"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        return "a tool must be a regular file (not a link, directory or device)"
    if info.st_size > MAX_FILE_BYTES:
        return f"the file is {info.st_size} bytes; a tool may be at most {MAX_FILE_BYTES}"
    if not info.st_mode & 0o111:
        return f"it is not executable; run `chmod +x $LIVE_SWE_SCAFFOLD/tools/{name}`"
    problem = header_problem(path, name)
    if problem:
        return problem
    try:
        source = read_regular(path, MAX_FILE_BYTES)
    except OSError:
        return "a tool must be a regular file (not a link, directory or device)"
    if len(source) > MAX_FILE_BYTES:
        return f"the file grew past {MAX_FILE_BYTES} bytes while it was checked"
    language = tool_language(source)
    if language is not None:
        problem = syntax_problem(source, language)
        if problem:
            return problem
    return None


def help_problem(env: Environment, path_in_env: str, name: str, timeout: float = HELP_TIMEOUT) -> str | None:
    """``NAME --help`` must exit 0 with some output, inside the environment, within ``timeout``."""
    out = env.execute(f"{shlex.quote(path_in_env)} --help", timeout=timeout)
    if out.timed_out:
        return f"`{name} --help` did not finish within {timeout:g}s; it must print its usage and exit at once"
    tail = out.text.strip()[-400:]
    if out.returncode != 0:
        return f"`{name} --help` exited with status {out.returncode}; it must print its usage and exit 0. Output: {tail!r}"
    if not tail:
        return f"`{name} --help` printed nothing; it must print its usage"
    return None


def tool_problem(path: Path, env: Environment, path_in_env: str, *, help_timeout: float = HELP_TIMEOUT) -> str | None:
    name = path.name
    return static_problem(path, name) or help_problem(env, path_in_env, name, help_timeout)
