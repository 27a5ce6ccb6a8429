"""Grammars that make an embedded model's reply always parse (llama.cpp GBNF).

Text mode: free lines of prose (a THOUGHT, a PLAN with numbered steps, anything) then exactly one
```bash block, nothing after it but blank space. Tool-call mode: the same prose then one call of
the ``bash`` function, written the way Qwen's chat template writes calls
(``<tool_call>\\n{"name": "bash", "arguments": {"command": ...}}\\n</tool_call>``).

Every reply these grammars allow is accepted by :mod:`live_swe.agent.parse` with the command the
reply shows (the tests check both directions on many replies). The rules that make it so:

- prose never contains three backticks in a row (so no other fence can open), and its lines end
  with a newline, so the fence starts a line;
- the command never contains three backticks in a row (the parser ends the block at the first);
- the command starts with a character Python's ``str.strip`` keeps, so it is never empty;
- in JSON, the command is a string without ``\\u`` escapes (no lone surrogates reach a shell).

A reply cut short by the token budget is finished by the decoder (see ``ActionFormat``): the
opener is written for the model if it is still in its prose, the closer when the budget ends.
"""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass
from typing import Any

# Characters str.strip() removes, besides the ASCII controls and space (excluded separately).
_UNICODE_SPACES = r"\x7F\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"

# Prose: lines without three backticks in a row; a line may be empty. After the action only blank
# space may follow (the decoder stops as soon as the action is complete anyway).
_PROSE = r"""
line      ::= [^`\n]* (tick [^`\n]+)* tick? "\n"
tick      ::= "`" | "``"
end       ::= [ \t\n]*
"""

_TEXT_COMMAND = rf"""
command   ::= ([^\x00-\x20`{_UNICODE_SPACES}] [^`]* | tick [^`]+) (tick [^`]+)* tick? "\n```" end
"""

_JSON_COMMAND = rf"""
command   ::= first char* "\"}}}}\n</tool_call>" end
first     ::= [^"\\\x00-\x20{_UNICODE_SPACES}] | "\\" ["\\/]
char      ::= [^"\\\x00-\x1F] | "\\" ["\\/bfnrt]
"""


@dataclass(frozen=True)
class ActionFormat:
    """One action format: the grammar of a whole reply, and how a reply cut short by the token
    budget is finished: ``opener`` starts the action, ``rest_grammar`` is what may follow it, and
    ``close`` finishes an action whose budget ran out."""

    name: str
    opener: str
    closer: str
    command_rules: str

    @property
    def grammar(self) -> str:
        return f"root      ::= line* {json.dumps(self.opener)} command\n{self.command_rules}{_PROSE}"

    @property
    def rest_grammar(self) -> str:
        return f"root      ::= command\n{self.command_rules}{_PROSE}"

    def in_action(self, text: str) -> bool:
        return self.opener in text

    def action_end(self, text: str) -> int | None:
        """Where the first complete action in ``text`` ends (the reply stops there), if there is one."""
        found = _COMPLETE[self.name].search(text)
        return found.end() if found else None

    def open(self, text: str) -> str:
        """What to append to ``text`` (prose) so that the action starts: the rest of the opener
        when the model has begun writing it at a line start, else the whole opener on a new line.
        (Opening a second fence after a half-written one would end the action at once.)"""
        for begun in range(len(self.opener) - 1, 0, -1):
            start = len(text) - begun
            if text.endswith(self.opener[:begun]) and (start == 0 or text[start - 1] == "\n"):
                return self.opener[begun:]
        return ("" if not text else "\n" if text.endswith("\n") else "\n\n") + self.opener

    def close(self, text: str) -> str:
        """What to append to ``text`` (cut inside its action) so that it parses."""
        if self.name == "tool_call" and (len(text) - len(text.rstrip("\\"))) % 2:
            return "\\" + self.closer  # a dangling escape becomes an escaped backslash
        return self.closer


TEXT = ActionFormat("text", "```bash\n", "\n```", _TEXT_COMMAND)
TOOL_CALL = ActionFormat("tool_call", '<tool_call>\n{"name": "bash", "arguments": {"command": "',
                         '"}}\n</tool_call>', _JSON_COMMAND)
FORMATS = {f.name: f for f in (TEXT, TOOL_CALL)}

# A complete action, as the kernel's parser reads it (text mode: the fences it accepts).
_COMPLETE = {
    "text": re.compile(r"```(?:bash|sh|mswea_bash_command)[ \t]*\n.*?```", re.DOTALL),
    "tool_call": re.compile(r"<tool_call>\n\{[^\n]*\}\n</tool_call>"),
}

_CALL = re.compile(r"<tool_call>\n(\{[^\n]*\})\n</tool_call>\s*\Z")


def split_tool_call(text: str) -> tuple[str, dict[str, Any] | None]:
    """A tool-call reply -> (its prose, the call as {"name", "arguments"}) or (text, None)."""
    match = _CALL.search(text)
    if not match:
        return text, None
    try:
        call = json.loads(match.group(1))
    except json.JSONDecodeError:
        return text, None
    if not isinstance(call, dict) or not isinstance(call.get("arguments"), dict):
        return text, None
    return text[: match.start()], call


class GrammarFilter:
    """A llama.cpp grammar sampler used as a filter: which tokens may come next, then accept one.

    Checking the one token greedy decoding picks is cheap; filtering the whole vocabulary (151k
    tokens for Qwen) costs tens of milliseconds, so it is done only when that token is refused."""

    def __init__(self, llama_cpp: Any, vocab: Any, grammar: str):
        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
        if not self._sampler:
            raise ValueError("llama.cpp refused the grammar")
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all: Any = None

    def allows(self, token: int) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 0.0, 0.0
        self._apply(self._one, 1)
        return self._one[0].logit != float("-inf")

    def mask(self, logits: Any) -> None:
        """Set the logit of every token the grammar refuses here to -inf (a float32 numpy array)."""
        import numpy as np

        n = len(logits)
        if self._all is None or len(self._all) != n:
            self._all = np.zeros(n, dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])
            self._all["id"] = np.arange(n, dtype=np.int32)
        self._all["logit"] = logits
        data = self._all.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data))
        self._apply(data, n)
        logits[:] = self._all["logit"]

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self):
        self.close()

    def _apply(self, data: Any, size: int) -> None:
        array = self._lib.llama_token_data_array(data=ctypes.cast(data, ctypes.POINTER(self._lib.llama_token_data)),
                                                 size=size, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))


def grammar_accepts(llama_cpp: Any, llm: Any, grammar: str, text: str) -> bool:
    """Whether llama.cpp's grammar engine accepts ``text`` whole (tokenized by ``llm``'s vocabulary),
    ending where the grammar may end. Used to check the grammars against the parser."""
    gate = GrammarFilter(llama_cpp, llm._model.vocab, grammar)
    try:
        for token in llm.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            if not gate.allows(token):
                return False
            gate.accept(token)
        return gate.allows(llm.token_eos())
    finally:
        gate.close()
