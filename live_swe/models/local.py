"""``local/NAME``: an embedded llama.cpp model (llama-cpp-python), on the CPU, with no API key.

The prompt is rendered with the chat template stored in the GGUF file. Decoding is greedy
(temperature 0) with a fixed seed, and the KV cache is reset at the start of each new
conversation, so the same session gives the same replies every time. One loaded model is kept
per process: sessions that follow each other do not reload it.

Two decoding rules keep small models in the loop: a reply ends once it holds one complete
```bash block (the text action format allows exactly one), and a reply may not copy one of the
last few replies whole (see ``_NoRepeat``). Both are options (``stop_after_action``,
``no_repeat_ngram=0`` turns the second off).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from live_swe.models.base import ModelError, Reply, TokenSink, Usage

DEFAULT_SEED = 1234
RECENT_REPLIES = 3  # how many of the last replies a new reply may not copy whole (see _NoRepeat)
INSTALL_HINT = "pip install 'live-swe[local]'"

# A complete text-mode action (the kernel's parser accepts the same fences). Generation stops
# once one is written: the action format allows exactly one, and small models otherwise tend to
# go on and imagine the command's output.
_ACTION_BLOCK = re.compile(r"```(?:bash|sh|mswea_bash_command)[ \t]*\n.*?```", re.DOTALL)


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

    @classmethod
    def from_name(cls, name: str, **options: Any) -> LocalModel:
        from live_swe.errors import UserError
        from live_swe.models import catalog

        try:
            spec = catalog.spec_for(name)
        except UserError as exc:
            raise ModelError(str(exc)) from None
        _llama_cpp()  # the missing runtime is the first thing to say
        if not catalog.is_installed(spec.name):
            raise ModelError(f"local/{spec.name} is not pulled yet; run: live-swe models pull {spec.name}")
        allowed = {"n_ctx", "max_tokens", "temperature", "seed", "n_threads", "stop_after_action", "no_repeat_ngram"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ModelError(f"local/{spec.name}: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        settings = {"n_ctx": spec.n_ctx, "max_tokens": spec.max_tokens, **options}
        return cls(f"local/{spec.name}", str(catalog.model_path(spec)), **settings)

    def query(self, messages: list[dict[str, Any]], *, tools=None, on_token: TokenSink | None = None) -> Reply:
        if tools:
            raise ModelError(f"{self.name} answers in the text action format only; set `action_format: text` "
                             "in the scaffold")
        with _lock:
            loaded = _load(self.path, self.n_ctx, self.n_threads, self.seed)
            prompt, stops = self._prompt_tokens(loaded, messages)
            room = self.n_ctx - len(prompt)
            if room < 16:
                raise ModelError(
                    f"{self.name}: the conversation ({len(prompt)} tokens) no longer fits the context window of "
                    f"{self.n_ctx} tokens; lower the step limit or elide old observations (scaffold `context` policy)"
                )
            if loaded.last_prompt != prompt[: len(loaded.last_prompt)]:
                loaded.llm.reset()  # a new conversation starts from an empty cache: same input, same output
            loaded.last_prompt = prompt
            banned = [loaded.llm.tokenize(reply.encode("utf-8"), add_bos=False) for reply in _recent_replies(messages)]
            content, generated = self._generate(loaded, prompt, stops, min(self.max_tokens, room), on_token, banned)
        return Reply(content=content, usage=Usage(len(prompt), generated), cost=0.0)

    def _prompt_tokens(self, loaded: _Loaded, messages: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
        """The conversation rendered with the GGUF's chat template, as tokens, and its stop strings."""
        plain = [{"role": m["role"], "content": _text(m.get("content"))} for m in messages]
        try:
            rendered = loaded.formatter(messages=plain)
        except Exception as exc:  # noqa: BLE001 - the GGUF's own Jinja template can raise anything
            raise ModelError(f"{self.name}: the model's chat template failed on this conversation: {exc}") from None
        tokens = loaded.llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        stops = [s for s in (rendered.stop if isinstance(rendered.stop, list) else [rendered.stop]) if s]
        return tokens, stops

    def _generate(self, loaded: _Loaded, prompt: list[int], stops: list[str], max_tokens: int,
                  on_token: TokenSink | None, previous: list[list[int]]) -> tuple[str, int]:
        """Greedy (by default) decoding, streamed; returns the reply text and the tokens generated."""
        llama_cpp = _llama_cpp()
        llm = loaded.llm
        llm.set_seed(self.seed)
        completion: list[int] = []
        text = ""
        processors = None
        if self.no_repeat_ngram and previous:
            processors = llama_cpp.LogitsProcessorList([_NoRepeat(previous, len(prompt), self.no_repeat_ngram)])
        tokens = llm.generate(prompt, temp=self.temperature, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0,
                              reset=True, logits_processor=processors)
        try:
            for token in tokens:
                if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                    break
                completion.append(token)
                # Decode everything so far: a character split over two tokens shows up once complete.
                decoded = llm.detokenize(completion, prev_tokens=prompt).decode("utf-8", errors="ignore")
                end = _stop_at(decoded, stops, self.stop_after_action)
                piece = decoded[len(text): end if end is not None else len(decoded)]
                if piece:
                    text += piece
                    if on_token:
                        on_token(piece)
                if end is not None or len(completion) >= max_tokens:
                    break
        finally:
            tokens.close()
        return text, len(completion)


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


def _stop_at(text: str, stops: list[str], after_action: bool) -> int | None:
    """Where the reply ends, if it has ended: at a stop string, or just after a complete action."""
    ends = [text.index(s) for s in stops if s in text]
    if after_action:
        action = _ACTION_BLOCK.search(text)
        if action:
            ends.append(action.end())
    return min(ends) if ends else None


def _text(content: Any) -> str:
    if isinstance(content, list):  # content blocks: the text parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")
