"""What a shell command does, as far as the analysers need to know: which files it reads, searches,
edits or creates, and whether it runs code or tests.

This is a heuristic over the command text (the agent's commands are bash one-liners, here-documents
and pipelines); it never runs anything. A command it cannot split is still classified by its words.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# Programs that print files (a read), look for things (a search) or run code.
_READERS = {"cat", "head", "tail", "less", "more", "nl", "bat", "view", "awk", "wc", "od", "xxd"}
_SEARCHERS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "ls", "tree", "locate", "fd"}
_RUNNERS = {"python", "python3", "pytest", "py.test", "tox", "nox", "node", "ruby", "go", "cargo", "make",
            "npm", "yarn", "pnpm", "bash", "sh", "java", "mvn", "gradle", "php", "perl", "deno"}
_WRAPPERS = {"sudo", "time", "nice", "nohup", "env", "command", "exec", "timeout", "xargs"}
_TEST_WORDS = re.compile(r"\b(pytest|py\.test|unittest|tox|nox|nosetests|test|tests|spec)\b|(^|/)test_\w+")
_NOT_FILES = ("/dev/", "-", "&")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_WRITE_IN_CODE = re.compile(r"""open\(\s*['"]([^'"]+)['"]\s*,\s*['"][wa]|Path\(\s*['"]([^'"]+)['"]\s*\)\.write_""")
_WRITES = re.compile(r"\.write_text\(|\.write_bytes\(|\.write\(|['\"][wa]\+?['\"]")
_QUOTED_FILE = re.compile(r"""['"]([\w./-]+\.\w{1,5})['"]""")
_SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_REDIRECT = re.compile(r"^(\d*|&)(>>?|<)(.*)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"^\d+[smh]?$")


@dataclass
class CommandFacts:
    """What one command does. Paths are as written in the command (``./`` removed)."""

    text: str
    reads: set[str] = field(default_factory=set)  # files printed whole or in part
    greps: set[str] = field(default_factory=set)  # single files searched (grep PATTERN FILE)
    targets: set[str] = field(default_factory=set)  # files run (a script, a test file or folder)
    whole_reads: set[str] = field(default_factory=set)  # files printed whole (cat, less...)
    searches: list[str] = field(default_factory=list)  # search patterns (grep, rg, find -name)
    edits: set[str] = field(default_factory=set)  # files changed in place or overwritten
    creates: set[str] = field(default_factory=set)  # files written from nothing (cat > F, touch, cp, mv)
    runs: bool = False  # runs code (a script, python -c, a test runner)
    tests: bool = False  # runs tests
    submits: bool = False
    scaffold: bool = False  # writes the agent's own scaffold or tools ($LIVE_SWE_SCAFFOLD)

    @property
    def changes(self) -> set[str]:
        return self.edits | self.creates

    @property
    def inspects_only(self) -> bool:
        """Reads or searches and nothing else (no edit, no run)."""
        return bool(self.reads or self.greps or self.searches) and not (self.changes or self.runs or self.scaffold)


def normalise_path(path: str) -> str:
    path = path.strip().strip("'\"")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def _heredoc_bodies(command: str) -> tuple[str, list[str]]:
    """The command without its here-document bodies, and the bodies."""
    lines = command.split("\n")
    kept, bodies, index = [], [], 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        for match in _HEREDOC.finditer(line):
            end = match.group(2)
            body = []
            while index < len(lines) and lines[index].strip() != end:
                body.append(lines[index])
                index += 1
            index += 1  # the terminator
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


def _lines_as_lists(command: str) -> str:
    """Newlines outside quotes separate commands: write them as ``;`` (a ``\\`` newline joins lines)."""
    out, quote, escaped = [], "", False
    for char in command:
        if escaped:
            escaped = False
            out.append(" " if char == "\n" and not quote else char)
            if char == "\n" and not quote:
                out.pop(-2)  # the backslash of a continuation
            continue
        if char == "\\" and quote != "'":
            escaped = True
        elif char in "'\"" and (not quote or quote == char):
            quote = "" if quote else char
        elif char == "\n" and not quote:
            char = ";"
        out.append(char)
    return "".join(out)


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command in a list or pipeline (``&&``, ``||``, ``;``, ``|``, newlines)."""
    try:
        lexer = shlex.shlex(_lines_as_lists(command), posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = ""
        words = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain words
        words = command.replace(";", " ; ").replace("&&", " && ").replace("|", " | ").split()
    commands, current = [], []
    for word in words:
        if word in (";", "&&", "||", "|", "&", ";;", "|&") or word == "\n":
            if current:
                commands.append(current)
            current = []
        else:
            current.append(word)
    if current:
        commands.append(current)
    return commands


def _redirect_targets(words: list[str]) -> tuple[list[str], list[str]]:
    """The words without redirections, and the files written by ``>`` / ``>>``."""
    kept, targets, index = [], [], 0
    while index < len(words):
        word = words[index]
        match = _REDIRECT.match(word)
        if match:
            target = match.group(3)
            if not target and index + 1 < len(words):
                index += 1
                target = words[index]
            if match.group(2) != "<" and not target.startswith("&"):
                targets.append(target)
            index += 1
            continue
        kept.append(word)
        index += 1
    return kept, targets


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program (its base name) and its arguments, past assignments and wrappers like ``timeout 10``."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = word.rsplit("/", 1)[-1]
        if name in _WRAPPERS:
            index += 1
            while index < len(words) and (words[index].startswith("-") or _DURATION.match(words[index])):
                index += 1
            continue
        return name, words[index + 1:]
    return "", []


def _operands(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def _is_file_word(word: str) -> bool:
    return bool(word) and not word.startswith(_NOT_FILES) and "*" not in word and word not in (".", "..")


def _looks_like_file(word: str) -> bool:
    """A path with a file name (``pkg/mod.py``, ``README.md``), not a directory like ``src``."""
    return _is_file_word(word) and ("." in word.rsplit("/", 1)[-1])


def _sed(facts: CommandFacts, args: list[str]) -> None:
    in_place = any(a == "-i" or a.startswith("-i") or a == "--in-place" or (a.startswith("-") and "i" in a[1:]
                   and not a.startswith("--")) for a in args)
    operands, script_seen, files = [], False, []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in ("-e", "--expression"):
            script_seen = True
            skip_next = True
            continue
        if arg.startswith("-"):
            continue
        operands.append(arg)
    files = operands if script_seen else operands[1:]
    files = [normalise_path(f) for f in files if _is_file_word(f)]
    if in_place:
        facts.edits.update(files)
    else:
        facts.reads.update(files)


def _grep(facts: CommandFacts, program: str, args: list[str]) -> None:
    operands, pattern_given, skip_next = [], None, False
    for index, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if arg in ("-e", "--regexp") and index + 1 < len(args):
            pattern_given = args[index + 1]
            skip_next = True
            continue
        if arg in ("-A", "-B", "-C", "-m", "--include", "--exclude", "-g", "--glob", "-t", "--type"):
            skip_next = True
            continue
        if not arg.startswith("-"):
            operands.append(arg)
    pattern = pattern_given if pattern_given is not None else (operands.pop(0) if operands else "")
    if pattern:
        facts.searches.append(pattern)
    single_file = len(operands) == 1 and _looks_like_file(operands[0]) and not any(
        a.startswith("-r") or a.startswith("-R") or a == "--recursive" for a in args)
    if single_file and program == "grep":
        facts.greps.add(normalise_path(operands[0]))


def _find(facts: CommandFacts, args: list[str]) -> None:
    for index, arg in enumerate(args):
        if arg in ("-name", "-iname", "-path", "-ipath", "-regex") and index + 1 < len(args):
            facts.searches.append(args[index + 1])
    if not facts.searches:
        facts.searches.append("find " + " ".join(_operands(args)[:1]))


def _git(facts: CommandFacts, args: list[str]) -> None:
    sub = args[0] if args else ""
    rest = args[1:]
    if sub == "grep":
        _grep(facts, "git-grep", rest)
    elif sub in ("show", "log", "diff", "status", "blame"):
        facts.searches.append(f"git {sub} {' '.join(rest)}".strip())
    elif sub in ("apply", "am"):
        facts.edits.add("(patch)")
    elif sub in ("checkout", "restore") and "--" in args:
        facts.edits.update(normalise_path(a) for a in args[args.index("--") + 1:])


def _interpreter(facts: CommandFacts, program: str, args: list[str], bodies: list[str]) -> None:
    facts.runs = True
    text = " ".join(args)
    if program in ("pytest", "py.test", "tox", "nox") or _TEST_WORDS.search(text):
        facts.tests = True
    elif args[:1] == ["-c"] and re.search(r"\bassert\b", text):
        facts.tests = True  # an assertion about the changed code is a test
    for code in [text] + (bodies if (args[:1] == ["-"] or not args) else []):
        for match in _WRITE_IN_CODE.finditer(code):
            facts.creates.add(normalise_path(match.group(1) or match.group(2)))
        if program.startswith("python") and _WRITES.search(code) and not _WRITE_IN_CODE.search(code):
            # a script that writes through a variable (path = Path('m.py'); path.write_text(...)):
            # the files it names are taken as edited
            facts.edits.update(normalise_path(m) for m in _QUOTED_FILE.findall(code))
    if args[:1] != ["-c"]:
        facts.targets.update(normalise_path(a) for a in _operands(args) if _is_file_word(a) and ("/" in a or "." in a))


def _files(args: list[str]) -> set[str]:
    return {normalise_path(f) for f in _operands(args) if _is_file_word(f)}


def _read_whole(facts: CommandFacts, program: str, args: list[str], targets: list[str]) -> None:
    if not targets:  # `cat > FILE` writes, it does not read
        facts.reads.update(_files(args))
        facts.whole_reads.update(_files(args))


def _read_part(facts: CommandFacts, program: str, args: list[str], targets: list[str]) -> None:
    operands = _operands(args)[1:] if program == "awk" else _operands(args)
    facts.reads.update(normalise_path(f) for f in operands if _looks_like_file(f))


def _copy(facts: CommandFacts, program: str, args: list[str], targets: list[str]) -> None:
    operands = _operands(args)
    if len(operands) >= 2:
        facts.creates.add(normalise_path(operands[-1]))
        if program == "mv":
            facts.edits.update(normalise_path(f) for f in operands[:-1])


def _perl(facts: CommandFacts, program: str, args: list[str], targets: list[str]) -> bool:
    if not any(a.startswith("-") and "i" in a for a in args):
        return False  # not in place: a script run
    facts.edits.update(normalise_path(f) for f in _operands(args)[1:] if _is_file_word(f))
    return True


def _echo(facts: CommandFacts, program: str, args: list[str], targets: list[str]) -> None:
    facts.submits = facts.submits or any(_SUBMIT in a for a in args)


def _listing(facts: CommandFacts, program: str, args: list[str], targets: list[str]) -> None:
    facts.searches.append(f"{program} {' '.join(_operands(args))}".strip())


_HANDLERS = {
    "sed": lambda facts, program, args, targets: _sed(facts, args),
    "cat": _read_whole, "less": _read_whole, "more": _read_whole, "nl": _read_whole, "bat": _read_whole,
    "view": _read_whole,
    "head": _read_part, "tail": _read_part, "awk": _read_part, "wc": _read_part, "od": _read_part, "xxd": _read_part,
    "find": lambda facts, program, args, targets: _find(facts, args),
    "ls": _listing, "tree": _listing, "locate": _listing, "fd": _listing,
    **{name: (lambda facts, program, args, targets: _grep(facts, program, args))
       for name in _SEARCHERS - {"find", "ls", "tree", "locate", "fd"}},
    "git": lambda facts, program, args, targets: _git(facts, args),
    "tee": lambda facts, program, args, targets: facts.edits.update(_files(args)),
    "rm": lambda facts, program, args, targets: facts.edits.update(_files(args)),
    "touch": lambda facts, program, args, targets: facts.creates.update(_files(args)),
    "cp": _copy, "mv": _copy, "install": _copy, "ln": _copy,
    "patch": lambda facts, program, args, targets: facts.edits.add(
        normalise_path(_operands(args)[0]) if _operands(args) else "(patch)"),
    "echo": _echo, "printf": _echo,
}
_HANDLERS["ed"] = _HANDLERS["ex"] = _HANDLERS["patch"]


def _one(facts: CommandFacts, words: list[str], bodies: list[str]) -> None:
    words, targets = _redirect_targets(words)
    program, args = _program(words)
    for target in targets:
        if _is_file_word(target) and target not in ("/dev/null",):
            (facts.creates if program in ("cat", "echo", "printf", "") else facts.edits).add(normalise_path(target))
    if program == "perl" and _perl(facts, program, args, targets):
        return
    handler = _HANDLERS.get(program)
    if handler is not None:
        handler(facts, program, args, targets)
    elif program in _RUNNERS or program.startswith("python") or (words[:1] and words[0].startswith("./")):
        _interpreter(facts, program, args, bodies)


def command_facts(command: str) -> CommandFacts:
    """Classify one command (a pipeline, a list, here-documents included)."""
    facts = CommandFacts(text=command)
    head, bodies = _heredoc_bodies(command)
    for words in _simple_commands(head):
        _one(facts, words, bodies)
    if "$LIVE_SWE_SCAFFOLD" in command or "${LIVE_SWE_SCAFFOLD}" in command:
        facts.scaffold = True
        for paths in (facts.edits, facts.creates):
            for path in [p for p in paths if "LIVE_SWE_SCAFFOLD" in p]:
                paths.discard(path)
    for paths in (facts.edits, facts.creates, facts.reads, facts.whole_reads, facts.greps, facts.targets):
        for path in [p for p in paths if p.startswith(("/tmp/", "/dev/")) or not p]:
            paths.discard(path)
    if facts.tests:
        facts.runs = True
    return facts


def same_command(a: str, b: str) -> bool:
    """The same command, whitespace aside."""
    return " ".join(a.split()) == " ".join(b.split())


def normalised_pattern(pattern: str) -> str:
    """A search pattern without quoting, anchors and word-boundary noise, lower-cased."""
    text = pattern.lower().strip("'\"")
    text = re.sub(r"\\[bw<>]|[\^$]|\\", "", text)
    return text.strip()
