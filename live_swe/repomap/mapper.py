"""Build the repository map: list files, read tags (cached), rank, render within a token budget."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from live_swe.repomap.cache import TagCache, default_cache_dir
from live_swe.repomap.files import source_files
from live_swe.repomap.rank import rank_definitions
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
    """Names and repository files the task text mentions."""
    words = set(_IDENTIFIER.findall(task))
    by_name: dict[str, list[str]] = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
        by_name.setdefault(os.path.splitext(os.path.basename(rel))[0], []).append(rel)
    mentioned_files = {rel for rel in files if rel in task}
    for token in re.findall(r"[\w./-]+", task):
        mentioned_files.update(by_name.get(token.strip("./"), ()) if "." in token else ())
    return words, mentioned_files


class RepoMapper:
    def __init__(self, repo: Path, cache_dir: Path | None = None, workers: int | None = None):
        self.repo = Path(repo).resolve()
        self.cache = TagCache(cache_dir or default_cache_dir(), self.repo)
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)

    def tags(self) -> tuple[dict[str, FileTags], int]:
        """Tags of every source file, and how many files had to be parsed."""
        listed = source_files(self.repo)
        result: dict[str, FileTags] = {}
        missing: list[tuple[str, str, tuple[int, int]]] = []
        for rel, language in listed:
            try:
                st = os.stat(self.repo / rel)
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            cached = self.cache.get(rel, stamp)
            if cached is None:
                missing.append((rel, language, stamp))
            else:
                result[rel] = cached
        for (rel, _language, stamp), tags in zip(missing, self._parse(missing), strict=True):
            self.cache.put(rel, stamp, tags)
            result[rel] = tags
        self.cache.prune(set(result))
        self.cache.save()
        return result, len(missing)

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
        except (BrokenProcessPool, OSError):
            # no worker processes here (e.g. a __main__ that cannot be re-imported): parse in this one
            return [tags_for_file(self.repo / rel, language) for rel, language, _ in missing]

    def build(self, task: str = "", token_budget: int = 1024) -> RepoMapResult:
        started = time.perf_counter()
        tags, parsed = self.tags()
        names, files = mentions(task, list(tags))
        ranked = rank_definitions(tags, names, files)
        text, shown = fit_to_budget(ranked, tags, token_budget)
        return RepoMapResult(text, len(tags), parsed, shown, time.perf_counter() - started)


def render(chosen: list[tuple[str, str]], tags: dict[str, FileTags]) -> str:
    """Files in path order, each with its chosen definitions' first lines in line order."""
    by_file: dict[str, set[str]] = {}
    for rel, name in chosen:
        by_file.setdefault(rel, set()).add(name)
    blocks = []
    for rel in sorted(by_file):
        names = by_file[rel]
        lines = [f"{line:>5}│{text}" for name, _kind, line, text in tags[rel].defs if name in names]
        blocks.append(rel + ":\n" + "\n".join(lines))
    return "\n".join(blocks)


def fit_to_budget(ranked: list[tuple[float, str, str]], tags: dict[str, FileTags], token_budget: int) -> tuple[str, int]:
    """The largest prefix of ``ranked`` whose rendering fits ``token_budget`` (binary search)."""
    if token_budget <= 0 or not ranked:
        return "", 0
    pairs = [(rel, name) for _score, rel, name in ranked]
    low, high, best = 1, len(pairs), ("", 0)
    while low <= high:
        middle = (low + high) // 2
        text = render(pairs[:middle], tags)
        if estimate_tokens(text) <= token_budget:
            best = (text, middle)
            low = middle + 1
        else:
            high = middle - 1
    return best


def build_repo_map(repo: Path, task: str = "", token_budget: int = 1024, cache_dir: Path | None = None) -> RepoMapResult:
    return RepoMapper(repo, cache_dir).build(task, token_budget)
