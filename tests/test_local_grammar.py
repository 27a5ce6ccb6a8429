"""The grammars of the embedded models against the kernel's parser, checked by llama.cpp itself.

Acceptance is decided by llama.cpp's own grammar engine (the one that constrains decoding), fed
each reply through a real model vocabulary (loaded vocabulary-only, no weights), and compared with
``live_swe.agent.parse`` on thousands of replies built to straddle the boundaries:

- everything a grammar accepts, the parser accepts, with the command the reply shows;
- every reply *shape* the parser accepts, the grammar accepts: prose lines (a THOUGHT, a PLAN of
  numbered steps, any text without a fence in it) then one ```bash block, nothing after it but
  blank space (text mode); the same prose then one ``bash`` call as Qwen writes calls (tool mode).

Deliberately narrower than the parser: ```sh and ```mswea_bash_command fences, fences inside the
prose, text after the action (the decoder stops at the end of the action anyway), and a command
that starts with blank space (starting with a visible character is what guarantees that even a
reply cut short by the token budget carries a command).
"""

from __future__ import annotations

import json
import random
import re

import pytest

from live_swe.agent.parse import FormatError, parse_action
from live_swe.models.action_grammar import TEXT, TOOL_CALL, grammar_accepts
from live_swe.models.base import Reply
from live_swe.models.local import tool_call_reply

PROSE = [
    "THOUGHT: I need to see which files exist first.", "THOUGHT: `total()` in `shop/cart.py` is wrong.",
    "PLAN:", "1. Find `total()`.", "2. Fix it with ``sed``.", "3. Run the tests, then submit.", "",
    "  indented text", "ends with one tick `", "ends with two ``", "unicode: café – ✓ 中文", "tab\there",
    "a ```python fence", "```", "```bash", "text ``` text", "<tool_call>", "{\"name\": \"bash\"}",
]
COMMANDS = [
    "ls -la", "", "   ", "\u00a0", "\u2003", "\u2003ls", "\x1c", "\x1cls", "echo ``", "echo `pwd`",
    "`which python3`", "grep -n total shop/cart.py\nsed -n 1,5p shop/cart.py", "cat <<'EOF' > f.py\nprint(1)\nEOF",
    "ls ```", "echo '```'", "\\", "python3 -c \"print('a\\nb')\"", "échelle", "ls\n", "  ls  ", "\tls",
    "sed -i 's/total = price/total += price/' shop/cart.py", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
]
OPENERS = ["```bash\n", "```sh\n", "```bash  \n", "```mswea_bash_command\n", "```python\n", "```\n", "``bash\n",
           "```bash", "```Bash\n"]
CLOSERS = ["\n```", "\n```\n", "\n```\n\n", "\n``` \n", "```", "", "\n``", "\n```\nmore text",
           "\n```\n\n```bash\nls\n```", "\n```\nTHOUGHT: done"]
SHAPE_CLOSERS = ["\n```", "\n```\n", "\n```\n\n", "\n``` \n"]


@pytest.fixture(scope="module", params=["smollm2-135m", "qwen2.5-coder-0.5b"])
def vocab(request):
    """A real model's vocabulary (no weights loaded): llama.cpp reads the grammar through it."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs the local runtime: pip install 'live-swe[local]'")
    from live_swe.models import catalog
    from live_swe.models.local import _cores  # noqa: F401 - the runtime module loads

    monkeypatch = pytest.MonkeyPatch()
    request.addfinalizer(monkeypatch.undo)
    from conftest import MODELS_CACHE

    monkeypatch.setenv(catalog.MODELS_DIR_ENV, str(MODELS_CACHE))
    spec = catalog.spec_for(request.param)
    if not catalog.is_installed(spec.name):
        catalog.pull(spec.name, print)
    llm = llama_cpp.Llama(model_path=str(catalog.model_path(spec)), vocab_only=True, verbose=False)
    return lambda grammar, text: grammar_accepts(llama_cpp, llm, grammar, text)


def text_replies(rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        prose = rng.sample(PROSE, rng.randint(0, 3))
        opener, command, closer = rng.choice(OPENERS), rng.choice(COMMANDS), rng.choice(CLOSERS)
        if rng.random() < 0.5:  # most replies on the main path, so the accepting side is well covered
            opener, closer = "```bash\n", rng.choice(SHAPE_CLOSERS)
        reply = "".join(line + "\n" for line in prose) + opener + command + closer
        if rng.random() < 0.25:  # a random edit anywhere: a character inserted or removed
            at = rng.randrange(len(reply) + 1)
            reply = reply[:at] + rng.choice(["`", "\n", " ", "x", "\u00a0", "```"]) + reply[at:] \
                if rng.random() < 0.6 else reply[:at] + reply[at + 1:]
        out.append(reply)
    return out


# A text reply shape, as a person reads it: prose lines, one ```bash block at the end, blank space.
TEXT_SHAPE = re.compile(r"\A(?P<prose>(?:[^\n]*\n)*?)```bash\n(?P<command>.*)\n```[ \t\n]*\Z", re.DOTALL)


def text_shape(reply: str) -> str | None:
    """The command a reply of the text shape shows, or None if it is not of that shape."""
    found = TEXT_SHAPE.match(reply)
    if not found or "```" in found["prose"] or "```" in found["command"] or not starts_visibly(found["command"]):
        return None
    return found["command"].strip()


def starts_visibly(command: str) -> bool:
    return bool(command) and not command[0].isspace()


def parsed(reply: str, fmt: str) -> str | None:
    try:
        if fmt == "text":
            return parse_action(Reply(content=reply), "text")
        return parse_action(tool_call_reply(reply, "call_1"), "tool_call")
    except FormatError:
        return None


def compare_with_the_parser(vocab, fmt, replies: list[str], shape) -> tuple[int, int]:
    """Every reply the grammar accepts parses to the command it shows; every reply of the shape that
    parses is accepted. Returns how many were accepted and refused."""
    accepted = refused = 0
    for reply in replies:
        action, shown = parsed(reply, fmt.name), shape(reply)
        if vocab(fmt.grammar, reply):
            assert action is not None, f"the grammar accepts a reply the parser refuses: {reply!r}"
            assert action == shown, f"the parser would run {action!r}, the reply shows {shown!r}: {reply!r}"
            accepted += 1
        else:
            assert action is None or shown is None, f"the grammar refuses a reply shape the parser accepts: {reply!r}"
            refused += 1
    return accepted, refused


def test_text_grammar_accepts_exactly_the_parsers_reply_shapes(vocab):
    accepted, refused = compare_with_the_parser(vocab, TEXT, text_replies(random.Random(20), 2500), text_shape)
    assert accepted > 300 and refused > 300  # both sides well covered


def test_text_grammar_on_the_replies_that_matter(vocab):
    accepted = [
        "THOUGHT: I need to see which files exist first.\n\n```bash\nls -la\n```",
        "PLAN:\n1. Find the code.\n2. Fix it.\n\nTHOUGHT: start with the file list.\n```bash\nls\n```",
        "```bash\ngrep -n total shop/cart.py\n```",
        "THOUGHT: write the file.\n```bash\ncat <<'EOF' > shop/cart.py\ndef total(p):\n    return sum(p)\nEOF\n```\n\n",
        "THOUGHT: `a` and ``b``\n```bash\necho `pwd` ``\n```",
    ]
    refused = [
        "THOUGHT: no command at all.",
        "THOUGHT: two.\n```bash\nls\n```\n```bash\npwd\n```",
        "THOUGHT: empty.\n```bash\n\n```", "THOUGHT: blank.\n```bash\n\u00a0\n```",
        "THOUGHT: python.\n```python\nprint(1)\n```", "THOUGHT: after.\n```bash\nls\n```\nand then more",
        "THOUGHT: unclosed.\n```bash\nls", "THOUGHT: inline ```bash\nls\n```",
        "```bash\nTHOUGHT: inside\nls\n```\n```bash\nls\n```",
    ]
    for reply in accepted:
        assert vocab(TEXT.grammar, reply) and parsed(reply, "text"), reply
    for reply in refused:
        assert not vocab(TEXT.grammar, reply), reply


def tool_replies(rng: random.Random, count: int) -> list[str]:
    commands = COMMANDS + ["say \"hi\"", "a\\b", "\u00e9t\u00e9"]
    out = []
    for _ in range(count):
        prose = rng.sample(PROSE, rng.randint(0, 2))
        encoded = json.dumps(rng.choice(commands), ensure_ascii=rng.random() < 0.3)
        body = rng.choice([
            f'{{"name": "bash", "arguments": {{"command": {encoded}}}}}',
            f'{{"name":"bash","arguments":{{"command":{encoded}}}}}',
            f'{{"name": "python", "arguments": {{"command": {encoded}}}}}',
            f'{{"name": "bash", "arguments": {{"cmd": {encoded}}}}}',
            f'{{"name": "bash", "arguments": {{"command": {encoded}}}',
        ])
        tail = rng.choice(["\n</tool_call>", "\n</tool_call>\n", "</tool_call>", "\n</tool_call>\nmore"])
        if rng.random() < 0.5:  # most calls on the main path
            body, tail = f'{{"name": "bash", "arguments": {{"command": {encoded}}}}}', "\n</tool_call>"
        reply = "".join(line + "\n" for line in prose) + "<tool_call>\n" + body + tail
        if rng.random() < 0.25:
            at = rng.randrange(len(reply) + 1)
            reply = reply[:at] + rng.choice(["\"", "\\", "\n", "}", " "]) + reply[at:]
        out.append(reply)
    return out


TOOL_SHAPE = re.compile(r'\A(?P<prose>(?:[^\n]*\n)*?)<tool_call>\n\{"name": "bash", "arguments": '
                        r'\{"command": (?P<command>"[^\n]*")\}\}\n</tool_call>[ \t\n]*\Z')


def tool_shape(reply: str) -> str | None:
    """The command of a call in the shape Qwen writes calls (JSON without \\u escapes), else None."""
    found = TOOL_SHAPE.match(reply)
    if not found or "```" in found["prose"] or "\\u" in found["command"]:
        return None
    try:
        command = json.loads(found["command"])
    except json.JSONDecodeError:
        return None
    return command.strip() if isinstance(command, str) and starts_visibly(command) else None


def test_tool_call_grammar_accepts_exactly_the_parsers_calls(vocab):
    accepted, refused = compare_with_the_parser(vocab, TOOL_CALL, tool_replies(random.Random(21), 1500), tool_shape)
    assert accepted > 200 and refused > 200


def test_a_reply_cut_short_is_finished_so_that_it_parses():
    """What the decoder writes when the budget runs out: the opener, then the closer."""
    for fmt, cut in ((TEXT, "THOUGHT: I will look\n```bash\nls -la"), (TOOL_CALL, 'x\n' + TOOL_CALL.opener + "ls \\")):
        assert fmt.in_action(cut)
        finished = cut + fmt.close(cut)
        assert parsed(finished, fmt.name) is not None, finished
        assert fmt.action_end(finished) == len(finished)
    assert not TEXT.in_action("THOUGHT: still thinking")


def test_the_opener_the_model_has_begun_is_completed_not_repeated():
    """The budget can run out with the fence half written ("```bash" without its newline); writing a
    second opener then made "```bash\\n\\n```" a complete, empty action (a reply seen in CI)."""
    prose = "The code to list low-stock items is:\n\n"
    for fmt in (TEXT, TOOL_CALL):
        for begun in range(len(fmt.opener)):
            text = prose + fmt.opener[:begun]
            opened = text + fmt.open(text)
            expected = prose + fmt.opener if begun else prose + "\n" + fmt.opener
            assert opened == expected, (fmt.name, begun)
            assert fmt.in_action(opened)
            finished = opened + "ls" + fmt.close(opened + "ls")
            assert parsed(finished, fmt.name) == "ls", finished
    assert TEXT.open("THOUGHT: look") == "\n\n" + TEXT.opener
    assert TEXT.open("a line `") == "\n\n" + TEXT.opener  # a tick inside prose is not a fence
    assert TEXT.open("") == TEXT.opener
