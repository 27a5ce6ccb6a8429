"""``local/NAME``: an embedded llama.cpp model (llama-cpp-python), on the CPU, with no API key.

The prompt is rendered with the chat template stored in the GGUF file. Decoding is greedy
(temperature 0) with a fixed seed, and the KV cache is reset at the start of each new
conversation, so the same session gives the same replies every time. One loaded model is kept
per process: sessions that follow each other do not reload it.

Decoding rules keep small models in the loop:
- a grammar (``live_swe.models.action_grammar``) allows only replies the kernel's parser accepts:
  prose lines then exactly one ```bash block (text mode), or one call of ``bash`` (tool-call
  mode); a reply about to run out of tokens gets its action opened or closed for it, so a format
  error cannot happen (``constrained=False`` turns this off);
- a reply ends once it holds one complete action (``stop_after_action``);
- a reply may not copy one of the last few replies whole (see ``_NoRepeat``; ``no_repeat_ngram=0``
  turns it off).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from live_swe.errors import UserError
from live_swe.models import catalog
from live_swe.models.action_grammar import FORMATS, TEXT, ActionFormat, GrammarFilter, split_tool_call
from live_swe.models.base import ModelError, Reply, TokenSink, ToolCall, Usage

DEFAULT_SEED = 1234
RECENT_REPLIES = 3  # how many of the last replies a new reply may not copy whole (see _NoRepeat)
INSTALL_HINT = "pip install 'live-swe[local]'"
# Tokens kept back for the action when a reply is still in its prose (the opener is then written
# for the model), and context kept free for the text written that way.
ACTION_RESERVE = 48
FORCED_ROOM = 32
# The prompt asks for a short THOUGHT, and small models that go on drift away from the task: a
# line of prose longer than PROSE_LINE_TOKENS ends at its next sentence end, and prose longer
# than PROSE_TOKENS ends where it is (room for a PLAN of a few numbered lines); the action opens.
PROSE_LINE_TOKENS = 32
PROSE_TOKENS = 256


def _llama_cpp():
    # llama.cpp's OpenMP threads spin while they wait by default; on a busy machine (other
    # processes on the same cores) that makes it several times slower. Read when the library loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError:
        raise ModelError(f"local models need the llama.cpp runtime, which is not installed; run: {INSTALL_HINT}") from None
    return llama_cpp


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass
class _Loaded:
    key: tuple
    llm: Any
    formatter: Any
    last_prompt: list[int] = field(default_factory=list)


_lock = threading.RLock()  # one llama.cpp context: queries from several threads take turns
_loaded: _Loaded | None = None


def _load(path: str, n_ctx: int, n_threads: int, seed: int) -> _Loaded:
    """The process's loaded model; loading another one frees the previous one first."""
    global _loaded
    key = (path, n_ctx, n_threads)
    if _loaded is not None and _loaded.key == key:
        return _loaded
    llama_cpp = _llama_cpp()
    _loaded = None
    try:
        llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                              seed=seed, verbose=False)
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelError(f"could not load the model file {path}: {exc}; pull it again with --force") from None
    _loaded = _Loaded(key, llm, _chat_formatter(llm, path))
    return _loaded


def _chat_formatter(llm: Any, path: str) -> Any:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    metadata = llm.metadata or {}
    template = metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelError(f"{path} has no chat template in its metadata; it cannot be used as a chat model")

    def token_text(key: str) -> str:
        token = metadata.get(key)
        return llm._model.token_get_text(int(token)) if token is not None else ""

    return Jinja2ChatFormatter(
        template=template,
        eos_token=token_text("tokenizer.ggml.eos_token_id"),
        bos_token=token_text("tokenizer.ggml.bos_token_id"),
        add_generation_prompt=True,
        stop_token_ids=[llm.token_eos()],
    )


class LocalModel:
    def __init__(
        self,
        name: str,
        path: str,
        *,
        n_ctx: int,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int = DEFAULT_SEED,
        n_threads: int | None = None,
        stop_after_action: bool = True,
        no_repeat_ngram: int = 8,
        constrained: bool = True,
    ):
        self.name = name
        self.path = path
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.n_threads = n_threads or _cores()
        self.stop_after_action = stop_after_action
        self.no_repeat_ngram = no_repeat_ngram
        self.constrained = constrained

    @classmethod
    def from_name(cls, name: str, **options: Any) -> LocalModel:
        try:
            spec = catalog.spec_for(name)
        except UserError as exc:
            raise ModelError(str(exc)) from None
        _llama_cpp()  # the missing runtime is the first thing to say
        if not catalog.is_installed(spec.name):
            raise ModelError(f"local/{spec.name} is not pulled yet; run: live-swe models pull {spec.name}")
        allowed = {"n_ctx", "max_tokens", "temperature", "seed", "n_threads", "stop_after_action", "no_repeat_ngram",
                   "constrained"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ModelError(f"local/{spec.name}: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        settings = {"n_ctx": spec.n_ctx, "max_tokens": spec.max_tokens, **options}
        return cls(f"local/{spec.name}", str(catalog.model_path(spec)), **settings)

    def query(self, messages: list[dict[str, Any]], *, tools=None, on_token: TokenSink | None = None) -> Reply:
        fmt = FORMATS["tool_call" if tools else "text"]
        with _lock:
            loaded = _load(self.path, self.n_ctx, self.n_threads, self.seed)
            prompt, stops = self._prompt_tokens(loaded, messages, tools)
            room = self.n_ctx - len(prompt) - FORCED_ROOM
            budget = min(self.max_tokens, room)
            if room < 8:
                raise ModelError(
                    f"{self.name}: the conversation ({len(prompt)} tokens) no longer fits the context window of "
                    f"{self.n_ctx} tokens; lower the step limit or elide old observations (scaffold `context` policy)"
                )
            if loaded.last_prompt != prompt[: len(loaded.last_prompt)]:
                loaded.llm.reset()  # a new conversation starts from an empty cache: same input, same output
            loaded.last_prompt = prompt
            banned = [loaded.llm.tokenize(reply.encode("utf-8"), add_bos=False) for reply in _recent_replies(messages)]
            decoder = _Decoder(self, loaded, prompt, fmt, on_token)
            content = decoder.run(stops, budget, banned)
        usage = Usage(len(prompt), decoder.generated)
        if not tools:
            return Reply(content=content, usage=usage, cost=0.0)
        number = 1 + sum(1 for m in messages if m.get("role") == "assistant")
        return tool_call_reply(content, f"call_{number}", usage)

    def _prompt_tokens(self, loaded: _Loaded, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None = None) -> tuple[list[int], list[str]]:
        """The conversation rendered with the GGUF's chat template, as tokens, and its stop strings.

        Tool calls are shown as the model writes them and tool results as Qwen's template shows
        them, for every template (some know nothing of tools)."""
        plain = [_plain_message(m) for m in messages]
        try:
            rendered = loaded.formatter(messages=plain, tools=tools or None)
        except Exception as exc:  # noqa: BLE001 - the GGUF's own Jinja template can raise anything
            raise ModelError(f"{self.name}: the model's chat template failed on this conversation: {exc}") from None
        tokens = loaded.llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        stops = [s for s in (rendered.stop if isinstance(rendered.stop, list) else [rendered.stop]) if s]
        return tokens, stops


def tool_call_reply(text: str, call_id: str, usage: Usage | None = None) -> Reply:
    """A reply written in tool-call form, as the kernel gets it: the prose, and the call if there is one
    (an unconstrained reply off the format has none: the kernel's parser tells the model)."""
    prose, call = split_tool_call(text)
    if call is None:
        return Reply(content=text, usage=usage or Usage(), cost=0.0)
    arguments = json.dumps(call["arguments"], ensure_ascii=False)
    return Reply(content=prose, tool_calls=(ToolCall(call_id, str(call.get("name")), arguments),),
                 usage=usage or Usage(), cost=0.0)


def _plain_message(message: dict[str, Any]) -> dict[str, str]:
    text = _text(message.get("content"))
    if message.get("role") == "tool":
        return {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = function.get("arguments")
        text += "<tool_call>\n" + json.dumps({"name": function.get("name"), "arguments": arguments},
                                             ensure_ascii=False) + "\n</tool_call>"
    return {"role": message["role"], "content": text}


class _Decoder:
    """One reply, decoded token by token on the loaded model (greedy at temperature 0).

    Under the grammar, the token the model prefers is checked alone first and the whole vocabulary
    is filtered only when it is refused. When the budget is about to run out in the prose, the
    action's opener is written for the model (then only a command may follow); when it runs out in
    the action, the closer is written. Text written that way is part of the reply and streamed."""

    def __init__(self, model: LocalModel, loaded: _Loaded, prompt: list[int], fmt: ActionFormat,
                 on_token: TokenSink | None):
        self.model = model
        self.llm = loaded.llm
        self.llama_cpp = _llama_cpp()
        self.prompt = prompt
        self.fmt = fmt
        self.on_token = on_token
        self.context = list(prompt)  # the tokens the model has seen: prompt, then the reply so far
        self.text = ""  # the reply so far, streamed
        self.generated = 0
        self._segment_start = len(prompt)  # tokens decoded into text since the last forced piece
        self._segment_text = ""

    def run(self, stops: list[str], budget: int, previous: list[list[int]]) -> str:
        import numpy as np

        model = self.model
        constrained = model.constrained
        gate = GrammarFilter(self.llama_cpp, self.llm._model.vocab, self.fmt.grammar) if constrained else None
        reserve = max(1, min(ACTION_RESERVE, budget // 2), budget - PROSE_TOKENS)
        no_repeat = _NoRepeat(previous, len(self.prompt), model.no_repeat_ngram) if model.no_repeat_ngram and previous \
            else None
        rng = np.random.default_rng(model.seed)
        _feed(self.llm, self.context)
        try:
            while True:
                in_action = self.fmt.in_action(self.text)
                if constrained and not in_action and (budget - self.generated <= reserve or self._line_done()):
                    gate.close()
                    gate = GrammarFilter(self.llama_cpp, self.llm._model.vocab, self.fmt.rest_grammar)
                    self._force(self.fmt.open(self.text))
                    continue
                if self.generated >= budget:
                    if constrained and in_action:
                        self._force(self.fmt.close(self.text))
                    break
                token = self._next_token(gate, no_repeat, rng)
                if self.llama_cpp.llama_vocab_is_eog(self.llm._model.vocab, token):
                    break
                self.generated += 1
                self.context.append(token)
                if self._show(stops):
                    break
                self.llm.eval([token])
        finally:
            if gate is not None:
                gate.close()
        return self.text

    def _line_done(self) -> bool:
        """The current prose line has run long and just finished a sentence."""
        line = self.text.rpartition("\n")[2]
        if not line.rstrip().endswith((".", "!", "?")):
            return False
        return len(self.llm.tokenize(line.encode("utf-8"), add_bos=False, special=False)) > PROSE_LINE_TOKENS

    def _next_token(self, gate: GrammarFilter | None, no_repeat: _NoRepeat | None, rng) -> int:
        import numpy as np

        raw = np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.llm.n_vocab(),))
        logits = raw.copy()
        if no_repeat is not None:
            no_repeat(self.context, logits)
        token = self._choose(logits, rng)
        if gate is not None and not gate.allows(token):
            gate.mask(logits)
            if not np.isfinite(logits).any():  # every token the grammar allows copies a recent reply
                logits = raw.copy()
                gate.mask(logits)
            token = self._choose(logits, rng)
        if gate is not None:
            gate.accept(token)
        return token

    def _choose(self, logits, rng) -> int:
        import numpy as np

        if self.model.temperature <= 0:
            return int(np.argmax(logits))
        top = np.argpartition(logits, -40)[-40:]  # top-k 40, then min-p 0.05 and top-p 0.95
        top = top[np.argsort(logits[top])[::-1]]
        top = top[np.isfinite(logits[top])]
        weights = np.exp((logits[top] - logits[top[0]]) / self.model.temperature)
        weights /= weights.sum()
        keep = (weights >= 0.05 * weights[0]) & (np.cumsum(weights) - weights < 0.95)
        weights = weights[keep] / weights[keep].sum()
        return int(rng.choice(top[keep], p=weights))

    def _force(self, piece: str) -> None:
        """Write ``piece`` into the reply as if the model had (the model reads it as its own)."""
        self._emit(piece)
        self._segment_text = ""
        self.context += self.llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False)
        self._segment_start = len(self.context)
        _feed(self.llm, self.context)

    def _show(self, stops: list[str]) -> bool:
        """Stream what the new token completes; True when the reply has ended."""
        decoded = self.llm.detokenize(self.context[self._segment_start:],
                                      prev_tokens=self.context[: self._segment_start]).decode("utf-8", errors="ignore")
        before = self.text[: len(self.text) - len(self._segment_text)]
        whole = before + decoded
        end = _stop_at(whole, stops, self.model.stop_after_action, self.fmt)
        whole = whole[:end] if end is not None else whole
        if len(whole) > len(self.text):
            self._emit(whole[len(self.text):])
        self._segment_text = whole[len(before):]
        return end is not None

    def _emit(self, piece: str) -> None:
        if piece:
            self.text += piece
            if self.on_token:
                self.on_token(piece)


def _feed(llm: Any, tokens: list[int]) -> None:
    """Bring the model's context to ``tokens``, reusing the cached common prefix; the logits are
    then those after the last token (which is always evaluated again for them)."""
    import numpy as np

    limit = min(llm.n_tokens, len(tokens) - 1)
    differ = np.flatnonzero(llm.input_ids[:limit] != np.asarray(tokens[:limit], dtype=llm.input_ids.dtype))
    llm.n_tokens = int(differ[0]) if len(differ) else limit
    llm.eval(tokens[llm.n_tokens:])


class _NoRepeat:
    """Small models decoding greedily tend to answer each observation with one of their last
    replies, word for word, and loop. This bans the token that would complete a run of ``n``
    tokens copied from one of those replies (like ``no_repeat_ngram_size`` in Hugging Face
    generation, limited to the recent replies), so a reply can reuse parts of them but never
    repeat one whole."""

    def __init__(self, previous: list[list[int]], prompt_length: int, n: int):
        self.prompt_length = prompt_length
        self.n = n
        self.follows: dict[tuple[int, ...], set[int]] = {}
        for reply in previous:
            for i in range(len(reply) - n + 1):
                self.follows.setdefault(tuple(reply[i: i + n - 1]), set()).add(reply[i + n - 1])

    def __call__(self, input_ids, scores):
        generated = input_ids[self.prompt_length:]
        if len(generated) >= self.n - 1:
            for token in self.follows.get(tuple(int(t) for t in generated[-(self.n - 1):]), ()):
                scores[token] = -float("inf")
        return scores


def _recent_replies(messages: list[dict[str, Any]], count: int = RECENT_REPLIES) -> list[str]:
    replies = [_text(m.get("content")) for m in messages if m.get("role") == "assistant"]
    return [r for r in replies[-count:] if r]


def _stop_at(text: str, stops: list[str], after_action: bool, fmt: ActionFormat = TEXT) -> int | None:
    """Where the reply ends, if it has ended: at a stop string, or just after a complete action."""
    ends = [text.index(s) for s in stops if s in text]
    if after_action:
        action = fmt.action_end(text)
        if action is not None:
            ends.append(action)
    return min(ends) if ends else None


def _text(content: Any) -> str:
    if isinstance(content, list):  # content blocks: the text parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")
