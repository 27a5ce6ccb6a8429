"""What a shell command does, read from its text before it runs: its simple commands (inside
``bash -c``, ``eval``, ``$(...)`` and subshells too), their classes, and the paths it writes.

The reading is deliberately pessimistic about evasions an agent may try: ``git -c alias.x=push x``,
``git -C dir push``, ``env X=1 git push``, ``/usr/bin/git``, ``\\git``, ``command git``, an alias set
with ``git config alias.NAME`` in an earlier command (``ShellState`` remembers it), and paths reached
through ``..`` are all resolved before the command is classed.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from dataclasses import dataclass, field

NETWORK_PROGRAMS = {"curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "telnet", "ftp", "rsync", "socat",
                    "aria2c", "http", "httpie"}
GIT_NETWORK = {"clone", "fetch", "pull", "push", "ls-remote", "remote-https", "archive"}
INSTALLERS = {
    "pip": {"install", "download"}, "pip3": {"install", "download"}, "uv": {"pip", "add", "sync", "tool"},
    "poetry": {"add", "install"}, "pipx": {"install"}, "conda": {"install"}, "mamba": {"install"},
    "npm": {"install", "i", "add", "ci"}, "yarn": {"add", "install"}, "pnpm": {"add", "install", "i"},
    "apt": {"install"}, "apt-get": {"install"}, "apk": {"add"}, "yum": {"install"}, "dnf": {"install"},
    "gem": {"install"}, "cargo": {"install", "add"}, "go": {"get", "install"}, "easy_install": None,
}
GIT_REWRITES = {"rebase", "filter-branch", "filter-repo", "update-ref", "replace", "reflog"}
TEST_PROGRAMS = {"pytest", "py.test", "tox", "nox", "unittest"}
WRITERS = {"cp", "mv", "rm", "touch", "mkdir", "rmdir", "tee", "ln", "install", "chmod", "chown", "truncate", "dd",
           "rsync", "unlink", "shred"}
WRAPPERS = {"env", "command", "exec", "nohup", "time", "sudo", "nice", "timeout", "stdbuf", "xargs", "builtin"}
SHELLS = {"bash", "sh", "dash", "zsh", "ksh"}
# Paths a command may write besides the repository and the scaffold: scratch space and the null device.
SCRATCH = ("/tmp", "/var/tmp", "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd", "/proc/self/fd")
_SEPARATORS = {";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"}
_URL = re.compile(r"\b(?:https?|ftp|ssh|git)://", re.IGNORECASE)
_SUBSTITUTION = re.compile(r"\$\(([^()]*(?:\([^()]*\)[^()]*)*)\)|`([^`]*)`")
INTERPRETERS = {"python", "python3", "perl", "node", "ruby", "php"}
_STRING_LITERAL = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
_REVISION = re.compile(r"^(HEAD[~^@]|@~|[0-9a-f]{7,40}$|origin/|ORIG_HEAD|FETCH_HEAD)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class ShellState:
    """What earlier commands set that changes how later ones read: git aliases."""

    git_aliases: dict[str, str] = field(default_factory=dict)


@dataclass
class CommandFacts:
    classes: set[str] = field(default_factory=set)
    programs: list[str] = field(default_factory=list)  # the program of each simple command
    writes_outside: list[str] = field(default_factory=list)
    runs_tests: bool = False


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _split_heredocs(command: str) -> tuple[str, list[str]]:
    """``command`` without its here-document bodies (text a program reads, not commands), and the
    bodies that a shell reads (``bash <<EOF``: those are commands)."""
    lines = command.split("\n")
    kept: list[str] = []
    scripts: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        i += 1
        for match in _HEREDOC.finditer(line):
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != match.group(2):
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter
            if _feeds_a_shell(line):  # `bash <<EOF`, `cat <<EOF | sh`: the body is run
                scripts.append("\n".join(body))
    return "\n".join(kept), scripts


def _feeds_a_shell(line: str) -> bool:
    segment: list[str] = []
    for token in [*tokenize(line), ";"]:
        if token in _SEPARATORS or set(token) <= set(";&|()\n"):
            words = _unwrap(segment)
            if words and _program(words[0]) in SHELLS | {"eval", "source", "."}:
                return True
            segment = []
        else:
            segment.append(token)
    return False


def simple_commands(command: str, depth: int = 0) -> list[list[str]]:
    """The words of each simple command in ``command``, nested shells and substitutions included."""
    found: list[list[str]] = []
    if "<<" in command:
        command, scripts = _split_heredocs(command)
        if depth < 4:
            for script in scripts:
                found += simple_commands(script, depth + 1)
    for match in _SUBSTITUTION.finditer(command):
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        if depth < 4:
            found += simple_commands(inner, depth + 1)
    tokens = tokenize(command.replace("\\\n", " "))
    current: list[str] = []
    for token in tokens:
        if token in _SEPARATORS or set(token) <= set(";&|()\n"):
            if current:
                found.append(current)
            current = []
        else:
            current.append(token)
    if current:
        found.append(current)
    result: list[list[str]] = []
    for words in found:
        result.append(words)
        inner = _nested_script(words)
        if inner is not None and depth < 4:
            result += simple_commands(inner, depth + 1)
    return result


_TOKEN = re.compile(r"""(\|\||&&|;;|\|&|[;&|()\n])|((?:[^\s'"\\;&|()]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+)|[ \t\r]+""")
_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""")


def _unquote(word: str) -> str:
    if not any(c in word for c in "'\"\\"):
        return word
    return _QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else
                       re.sub(r"\\(.)", r"\1", m.group(2)) if m.group(2) is not None else m.group(3), word)


def tokenize(command: str) -> list[str]:
    """Shell words and operators, quotes removed. Much faster than ``shlex`` (this runs before every
    command); text it cannot read (an unbalanced quote) is split on blanks, never dropped."""
    tokens: list[str] = []
    pos, end = 0, len(command)
    while pos < end:
        match = _TOKEN.match(command, pos)
        if match is None or match.end() == pos:
            tokens += command[pos:].replace(";", " ; ").replace("|", " | ").replace("&", " & ").split()
            break
        operator, word = match.group(1), match.group(2)
        if operator:
            tokens.append(operator)
        elif word:
            if word.startswith("#"):  # a comment, to the end of the line
                newline = command.find("\n", pos)
                pos = end if newline == -1 else newline
                continue
            tokens.append(_unquote(word))
        pos = match.end()
    return tokens


def _nested_script(words: list[str]) -> str | None:
    words = _unwrap(words)
    if not words:
        return None
    program = _program(words[0])
    if program == "eval":
        return " ".join(words[1:])
    if program in SHELLS:
        for i, word in enumerate(words[1:], 1):
            if word.startswith("-") and "c" in word[1:] and i + 1 < len(words):
                return words[i + 1]
    return None


def _program(word: str) -> str:
    return posixpath.basename(word.lstrip("\\"))


def _unwrap(words: list[str]) -> list[str]:
    """Drop leading variable assignments and wrappers (``env X=1``, ``command``, ``timeout 5``)."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
            continue
        program = _program(word)
        if program in WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])
                                      or (program == "timeout" and re.fullmatch(r"[\d.]+[smhd]?", words[i]))):
                i += 1
            continue
        break
    return words[i:]


def _git_subcommand(args: list[str], state: ShellState) -> tuple[str, list[str]]:
    """The git subcommand and its arguments, after git's own options and any alias."""
    aliases = dict(state.git_aliases)
    i = 0
    while i < len(args):
        word = args[i]
        if word == "-c" and i + 1 < len(args):
            key, _, value = args[i + 1].partition("=")
            if key.lower().startswith("alias."):
                aliases[key[6:].lower()] = value
            i += 2
        elif word in ("-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env") and i + 1 < len(args):
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            break
    if i >= len(args):
        return "", []
    sub, rest = args[i], args[i + 1:]
    seen = 0
    while sub.lower() in aliases and seen < 5:
        expansion = aliases[sub.lower()]
        seen += 1
        if expansion.startswith("!"):
            return "!", [expansion[1:]]
        parts = shlex.split(expansion) if expansion.strip() else [""]
        sub, rest = parts[0], parts[1:] + rest
    return sub, rest


def _remember_alias(sub: str, rest: list[str], state: ShellState) -> None:
    if sub != "config":
        return
    values = [a for a in rest if not a.startswith("-")]
    if len(values) >= 2 and values[0].lower().startswith("alias."):
        state.git_aliases[values[0][6:].lower()] = " ".join(values[1:])


def _git_classes(sub: str, rest: list[str]) -> set[str]:
    classes: set[str] = set()
    if sub in GIT_NETWORK:
        classes.add("network")
    if sub == "push":
        classes.add("git_push")
        if any(a in ("-f", "--force", "--mirror", "--delete", "-d") or a.startswith(("--force", "+"))
               or a.startswith(":") for a in rest):
            classes.add("git_history_rewrite")
    if sub in GIT_REWRITES and not (sub == "reflog" and "expire" not in rest and "delete" not in rest):
        classes.add("git_history_rewrite")
    if sub == "commit" and "--amend" in rest:
        classes.add("git_history_rewrite")
    if sub == "reset" and any(a in ("--hard", "--keep", "--merge", "--soft") or _REVISION.match(a) for a in rest):
        classes.add("git_history_rewrite")
    if sub == "branch" and any(a in ("-f", "--force", "-D", "-M", "-C", "-m", "-d", "--delete", "--move") for a in rest):
        classes.add("git_history_rewrite")
    if sub in ("checkout", "switch") and any(a in ("-B", "-C", "--force-create") for a in rest):
        classes.add("git_history_rewrite")
    if sub == "tag" and any(a in ("-f", "--force", "-d", "--delete") for a in rest):
        classes.add("git_history_rewrite")
    if sub == "gc" and any(a.startswith("--prune") for a in rest):
        classes.add("git_history_rewrite")
    return classes


class Reader:
    """Reads commands for one session: its repository, scaffold, registered tools and shell state."""

    def __init__(self, repo_dir: str, scaffold_dir: str | None = None):
        self.repo_dir = posixpath.normpath(repo_dir)
        self.scaffold_dir = posixpath.normpath(scaffold_dir) if scaffold_dir else None
        self.state = ShellState()

    def read(self, command: str) -> CommandFacts:
        facts = CommandFacts()
        if _URL.search(command):
            facts.classes.add("network")
        for words in simple_commands(command):
            self._one(words, facts)
        return facts

    def _one(self, words: list[str], facts: CommandFacts) -> None:
        targets = self._redirect_targets(words)
        words = [w for w in _strip_redirections(words)]
        words = _unwrap(words)
        for target in targets:
            self._note_write(target, facts)
        if not words:
            return
        program = _program(words[0])
        args = words[1:]
        facts.programs.append(program)
        if program == "git":
            self._git(args, facts)
            return
        if program in NETWORK_PROGRAMS:
            facts.classes.add("network")
        if program in INTERPRETERS or re.fullmatch(r"python3(\.\d+)?", program):
            code = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-c", "-e")), None)
            if code is not None:
                self._program_text(code, facts)
        if program in ("python", "python3") or re.fullmatch(r"python3(\.\d+)?", program):
            _python(args, facts)
            return
        _installer(program, args, facts)
        if program in TEST_PROGRAMS or (program in ("go", "cargo", "npm", "yarn", "make") and args[:1] == ["test"]):
            facts.runs_tests = True
        if re.search(r"(^|/)(runtests|run_tests)(\.py|\.sh)?$", words[0]):
            facts.runs_tests = True
        if program in WRITERS or (program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args)):
            self._writer(program, args, facts)

    def _git(self, args: list[str], facts: CommandFacts) -> None:
        sub, rest = _git_subcommand(args, self.state)
        if sub == "!":  # a shell alias: the command it runs
            nested = self.read(rest[0])
            facts.classes |= nested.classes
            facts.writes_outside += nested.writes_outside
            return
        _remember_alias(sub, rest, self.state)
        facts.classes |= _git_classes(sub, rest)

    def _program_text(self, code: str, facts: CommandFacts) -> None:
        """A program given inline (``python -c``, ``perl -e``, ``node -e``) may run commands through
        its string literals (``os.system("git push")``, ``subprocess.run(["git", "push"])``): they
        are read as one command line."""
        strings = [a or b for a, b in _STRING_LITERAL.findall(code)]
        for text in [*strings, " ".join(strings)] if strings else []:  # each literal, and a list of words
            nested = self.read(text)
            facts.classes |= nested.classes - {"write_outside"}  # a string is not a redirection
            if "rm_r_outside" in nested.classes:
                facts.writes_outside += nested.writes_outside

    def _writer(self, program: str, args: list[str], facts: CommandFacts) -> None:
        operands = [a for a in args if not a.startswith("-")]
        if program == "dd":
            operands = [a[3:] for a in args if a.startswith("of=")]
        elif program in ("cp", "mv", "ln", "install", "rsync") and operands:
            operands = operands[-1:]
        elif program in ("chmod", "chown") and operands:
            operands = operands[1:]
        elif program == "sed":
            operands = operands[1:]
        for path in operands:
            self._note_write(path, facts)
        recursive = any(a in ("-r", "-R", "--recursive") or (re.fullmatch(r"-[a-zA-Z]*[rR][a-zA-Z]*", a) is not None)
                        for a in args)
        if program == "rm" and recursive and any(self.outside(p) for p in operands):
            facts.classes.add("rm_r_outside")

    def _redirect_targets(self, words: list[str]) -> list[str]:
        targets = []
        for i, word in enumerate(words):
            match = re.fullmatch(r"\d*(>>?|&>>?|>\|)(.*)", word)
            if match:
                target = match.group(2) or (words[i + 1] if i + 1 < len(words) else "")
                if target and not target.startswith("&"):
                    targets.append(target)
        return targets

    def _note_write(self, path: str, facts: CommandFacts) -> None:
        if self.outside(path):
            facts.writes_outside.append(path)
            facts.classes.add("write_outside")

    def outside(self, path: str) -> bool:
        """Whether ``path`` (relative to the repository, where commands start) leaves the repository,
        the scaffold and the scratch folders."""
        if not path or path.startswith("$"):
            return path.startswith(("$HOME", "${HOME}"))
        if path.startswith("~"):
            return True
        if not path.startswith("/") and posixpath.normpath(path).split("/")[0] == "..":
            return True  # climbing out of the repository is leaving it, wherever it lands (scratch is named by its path)
        full = posixpath.normpath(path if path.startswith("/") else posixpath.join(self.repo_dir, path))
        for root in (self.repo_dir, self.scaffold_dir, *SCRATCH):
            if root and (full == root or full.startswith(root.rstrip("/") + "/")):
                return False
        return True


def _strip_redirections(words: list[str]) -> list[str]:
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        match = re.fullmatch(r"\d*(>>?|&>>?|>\||<<?<?)(.*)", word)
        if match:
            skip = not match.group(2)
            continue
        out.append(word)
    return out


def relative_to(path: str, root: str) -> str:
    return os.path.relpath(path, root)


def _python(args: list[str], facts: CommandFacts) -> None:
    """``python -m pip install``, ``python -m pytest``, ``python runtests.py``."""
    if len(args) >= 2 and args[0] == "-m":
        module = args[1]
        if module == "pip" and len(args) > 2 and args[2] in ("install", "download"):
            facts.classes |= {"package_install", "network"}
        if module in ("pytest", "unittest", "tox", "nox"):
            facts.runs_tests = True
    elif any(re.search(r"(^|/)(runtests|run_tests|test_[^/]*|[^/]*_test)\.py$", a) for a in args[:1]):
        facts.runs_tests = True


def _installer(program: str, args: list[str], facts: CommandFacts) -> None:
    """A package manager installing (``pip install``, ``npm i``, ``uv add``): network and an install."""
    if program not in INSTALLERS:
        return
    verbs = INSTALLERS.get(program, set())
    if verbs is None or (args and args[0] in verbs):
        sub = args[1] if program == "uv" and len(args) > 1 else ""
        if program != "uv" or args[0] in ("add", "sync", "tool") or sub == "install":
            facts.classes |= {"package_install", "network"}
