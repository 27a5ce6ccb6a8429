"""Build the repository map: list files, read tags (cached), rank, render within a token budget."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from live_swe.repomap.cache import TagCache, default_cache_dir, remove_quietly
from live_swe.repomap.files import source_files
from live_swe.repomap.rank import MAX_DEFINERS, MIN_LINK_CHARS, RefGraph
from live_swe.repomap.tags import FileTags, tags_for_batch, tags_for_file

CHARS_PER_TOKEN = 4  # the usual estimate; the map only needs to stay roughly within budget
PARALLEL_THRESHOLD = 200  # below this many files to parse, worker processes cost more than they save
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass
class RepoMapResult:
    text: str
    files: int  # source files considered
    parsed: int  # files parsed this time (the rest came from the cache)
    shown: int  # definitions in the map
    seconds: float

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def mentions(task: str, files: list[str]) -> tuple[set[str], set[str]]:
    """Names and repository files the task text mentions.

    A name counts when it looks like code: CamelCase or capitalised (``QuerySet``), with an
    underscore (``compute_total``), called (``filter()``), an attribute (``.filter``) or in
    backticks. Plain lowercase words (``field``, ``raises``) would pull in whatever happens to
    define them; words of a path are a file mention instead."""
    by_name: dict[str, list[str]] = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
        by_name.setdefault(os.path.splitext(os.path.basename(rel))[0], []).append(rel)
    mentioned_files = {rel for rel in files if rel in task}
    for token in re.findall(r"[\w./-]+", task):
        mentioned_files.update(by_name.get(token.strip("./"), ()) if "." in token else ())
    names: set[str] = set()
    for match in _IDENTIFIER.finditer(task):
        word, before, after = match.group(), task[match.start() - 1:match.start()], task[match.end():match.end() + 1]
        if before == "/" or after == "/" or (after == "." and _is_path_suffix(task, match.end())):
            continue  # part of a path
        if (word != word.lower() or "_" in word.strip("_") or after == "(" or before == "."
                or (before == "`" and after == "`") or "`" in (before + after)):
            names.add(word)
    return names, mentioned_files


_FILE_SUFFIX = re.compile(r"\.(?:py|pyi|js|jsx|ts|tsx|sh|bash|c|h|cc|cpp|hpp|go|rs|java|rb|php|json|ya?ml|toml|"
                          r"cfg|ini|txt|md|rst|html|css)\b(?!\()")


def _is_path_suffix(task: str, at: int) -> bool:
    """Whether ``task[at:]`` starts with a file extension (``.py``), as in ``query.py``."""
    return _FILE_SUFFIX.match(task, at) is not None


class RepoMapper:
    def __init__(self, repo: Path, cache_dir: Path | None = None, workers: int | None = None):
        self.repo = Path(repo).resolve()
        self.cache = TagCache(cache_dir or default_cache_dir(), self.repo)
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)

    def refresh(self) -> tuple[list[tuple[str, tuple[int, int]]], int]:
        """Bring the tag cache up to date: ``(path, stamp)`` of every source file, and how many
        files had to be parsed. Unchanged files are only stat'ed, not read."""
        root = str(self.repo)
        current: list[tuple[str, tuple[int, int]]] = []
        missing: list[tuple[str, str, tuple[int, int]]] = []
        for rel, language in source_files(self.repo):
            try:
                st = os.stat(f"{root}/{rel}")
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            current.append((rel, stamp))
            if not self.cache.has(rel, stamp):
                missing.append((rel, language, stamp))
        for (rel, _language, stamp), tags in zip(missing, self._parse(missing), strict=True):
            self.cache.put(rel, stamp, tags)
        self.cache.prune({rel for rel, _ in current})
        self.cache.save()
        return current, len(missing)

    def tags(self) -> tuple[dict[str, FileTags], int]:
        """Tags of every source file, and how many files had to be parsed."""
        current, parsed = self.refresh()
        return {rel: self.cache.tags(rel) for rel, _stamp in current}, parsed

    def graph(self, current: list[tuple[str, tuple[int, int]]]) -> RefGraph:
        """The reference graph of these files: loaded when they have not changed since it was saved."""
        fingerprint = graph_fingerprint(current)
        path = self.cache.path.with_suffix(".graph.npz")
        graph = RefGraph.load(path, fingerprint)
        if graph is None:
            graph = RefGraph.build({rel: self.cache.tags(rel) for rel, _stamp in current})
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                graph.save(tmp, fingerprint)
                os.replace(tmp, path)
            except OSError:
                remove_quietly(tmp)  # an unwritable cache only costs speed next time
        return graph

    def _parse(self, missing: list[tuple[str, str, tuple[int, int]]]) -> list[FileTags]:
        if len(missing) < PARALLEL_THRESHOLD or self.workers < 2:
            return [tags_for_file(self.repo / rel, language) for rel, language, _ in missing]
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        pairs = [(rel, language) for rel, language, _ in missing]
        size = max(20, len(pairs) // (self.workers * 4))
        batches = [pairs[i:i + size] for i in range(0, len(pairs), size)]
        # spawn, not fork: the caller may be a threaded app (the TUI's worker thread)
        try:
            with ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                results = pool.map(tags_for_batch, [str(self.repo)] * len(batches), batches)
                return [FileTags.from_json(item) for batch in results for item in batch]
        except (BrokenProcessPool, OSError, RuntimeError):
            # no worker processes here (e.g. a __main__ that cannot be re-imported): parse in this one
            return [tags_for_file(self.repo / rel, language) for rel, language, _ in missing]

    def build(self, task: str = "", token_budget: int = 1024) -> RepoMapResult:
        started = time.perf_counter()
        current, parsed = self.refresh()
        graph = self.graph(current)
        names, files = mentions(task, graph.files)
        text, shown = fit_to_budget(graph.rank(names, files), self.cache.tags, token_budget)
        return RepoMapResult(text, len(graph.files), parsed, shown, time.perf_counter() - started)


def graph_fingerprint(current: list[tuple[str, tuple[int, int]]]) -> str:
    digest = hashlib.sha1(f"graph-v2 {MAX_DEFINERS} {MIN_LINK_CHARS}\n".encode())
    for rel, (mtime, size) in current:
        digest.update(f"{rel}\0{mtime}\0{size}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def render_lines(defs: list[tuple[str, str, int, str]], names: set[str]) -> list[str]:
    return [f"{line:>5}│{text}" for name, _kind, line, text in defs if name in names]


def render(chosen: list[tuple[str, str]], tags_of: Callable[[str], FileTags]) -> str:
    """Files in path order, each with its chosen definitions' first lines in line order."""
    by_file: dict[str, set[str]] = {}
    for rel, name in chosen:
        by_file.setdefault(rel, set()).add(name)
    return "\n".join(rel + ":\n" + "\n".join(render_lines(tags_of(rel).defs, by_file[rel])) for rel in sorted(by_file))


def fit_to_budget(ranked: Iterable[tuple[float, str, str]], tags_of: Callable[[str], FileTags],
                  token_budget: int) -> tuple[str, int]:
    """The longest prefix of ``ranked`` whose rendering fits ``token_budget``, and its length.

    The rendered length is additive (a file's header once, a line per definition, a newline
    between files), so it is counted as the prefix grows and the map is rendered once."""
    if token_budget <= 0:
        return "", 0
    limit = token_budget * CHARS_PER_TOKEN
    chosen: list[tuple[str, str]] = []
    files: set[str] = set()
    length = -1  # the first file has no newline before it
    for _score, rel, name in ranked:
        lines = render_lines(tags_of(rel).defs, {name})
        grown = length + sum(len(line) + 1 for line in lines)
        if rel not in files:
            grown += len(rel) + 2  # newline before the file, "path:"
        if grown > limit:
            break
        length = grown
        files.add(rel)
        chosen.append((rel, name))
    return render(chosen, tags_of), len(chosen)


def build_repo_map(repo: Path, task: str = "", token_budget: int = 1024, cache_dir: Path | None = None) -> RepoMapResult:
    return RepoMapper(repo, cache_dir).build(task, token_budget)
