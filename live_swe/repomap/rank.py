"""Aider-style ranking: PageRank over a file graph whose edges are identifier references.

A file that references a name points at each file that defines it, weighted by how often it
uses the name and by how telling the name is. PageRank, personalised towards the files and
names the task mentions, ranks files; each file's rank is then shared out along its edges to the
definitions it references, and those definitions are ranked by what they received.

The graph does not depend on the task (a mentioned name only scales its edges), so it is built
once per state of the repository and kept as plain arrays (``.npz``, no pickle); ranking for a
task is a few vector operations over it.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from live_swe.repomap.tags import FileTags

MAX_DEFINERS = 10  # a name defined in more files than this (get, run, setUp) links nothing useful
MIN_LINK_CHARS = 3  # names like e, s, ok (minified code, loop variables) link nothing useful either
MENTION_FACTOR = 10.0  # edges of a name the task mentions weigh this much more
_WORDY = re.compile(r"^(?:[a-z0-9]+_[a-z0-9_]+|[A-Za-z][a-z0-9]+[A-Z]\w*)$")
_ARRAYS = ("definers_ptr", "definers_idx", "src", "dst", "name", "weight", "pair_keys",
           "pair_of_edge")


def name_weight(name: str, definers: int) -> float:
    """How telling a linking name is, whatever the task."""
    weight = 1.0
    if len(name) >= 8 and _WORDY.match(name):
        weight *= 10  # long snake_case / CamelCase names are specific
    if name.startswith("_"):
        weight *= 0.1
    if definers > 5:
        weight *= 0.1
    return weight


@dataclass
class RefGraph:
    files: list[str]  # sorted paths; a file's index is its node
    names: list[str]  # every defined name, sorted
    definers_ptr: np.ndarray  # per name: its first MAX_DEFINERS definers are definers_idx[ptr[i]:ptr[i + 1]]
    definers_idx: np.ndarray
    # one edge per (referencing file, defining file, name), with its task-independent weight
    src: np.ndarray
    dst: np.ndarray
    name: np.ndarray
    weight: np.ndarray
    # the definitions edges lead to, as sorted keys dst * len(names) + name, and each edge's key
    pair_keys: np.ndarray
    pair_of_edge: np.ndarray

    @classmethod
    def build(cls, tags: dict[str, FileTags]) -> RefGraph:
        files = sorted(tags)
        index = {rel: i for i, rel in enumerate(files)}
        definers: dict[str, list[int]] = defaultdict(list)
        for rel in files:
            for name in dict.fromkeys(d[0] for d in tags[rel].defs):
                definers[name].append(index[rel])
        names = sorted(definers)
        name_id = {name: i for i, name in enumerate(names)}
        counts = [len(definers[name]) for name in names]
        ptr, idx = [0], []
        for name in names:
            idx.extend(definers[name][:MAX_DEFINERS])
            ptr.append(len(idx))
        base = [name_weight(name, count) for name, count in zip(names, counts, strict=True)]
        src, dst, name_of, weight = [], [], [], []
        sqrt = math.sqrt
        for rel in files:
            s = index[rel]
            for ref, uses in tags[rel].refs.items():
                n = name_id.get(ref)
                if n is None or counts[n] > MAX_DEFINERS or len(ref) < MIN_LINK_CHARS:
                    continue
                w = base[n] * sqrt(uses)
                for d in idx[ptr[n]:ptr[n + 1]]:
                    if d != s:
                        src.append(s)
                        dst.append(d)
                        name_of.append(n)
                        weight.append(w)
        dst_a, name_a = np.array(dst, dtype=np.int64), np.array(name_of, dtype=np.int64)
        pair_keys, pair_of_edge = np.unique(dst_a * max(1, len(names)) + name_a, return_inverse=True)
        return cls(files, names, np.array(ptr, dtype=np.int64),
                   np.array(idx, dtype=np.int64), np.array(src, dtype=np.int64), dst_a, name_a,
                   np.array(weight, dtype=np.float64), pair_keys.astype(np.int64),
                   pair_of_edge.reshape(-1).astype(np.int64))

    # -- persistence (plain arrays: loading never unpickles) -------------------------------------

    def save(self, path: Path, fingerprint: str) -> None:
        arrays = {key: getattr(self, key) for key in _ARRAYS}
        arrays["files"] = _pack(self.files)
        arrays["names"] = _pack(self.names)
        arrays["fingerprint"] = _pack([fingerprint])
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)

    @classmethod
    def load(cls, path: Path, fingerprint: str) -> RefGraph | None:
        """The graph saved at ``path`` if it was built from the same files, else None."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if _unpack(data["fingerprint"]) != [fingerprint]:
                    return None
                return cls(_unpack(data["files"]), _unpack(data["names"]), **{key: data[key] for key in _ARRAYS})
        except (OSError, KeyError, ValueError, UnicodeDecodeError):
            return None  # missing, stale format or damaged: build it again

    # -- ranking for a task ----------------------------------------------------------------------

    def definers_of(self, name_index: int) -> np.ndarray:
        return self.definers_idx[self.definers_ptr[name_index]:self.definers_ptr[name_index + 1]]

    def name_indexes(self, words: set[str]) -> list[int]:
        found = []
        for word in words:
            i = _bisect(self.names, word)
            if i is not None:
                found.append(i)
        return sorted(found)

    def rank(self, mentioned_names: set[str] = frozenset(), mentioned_files: set[str] = frozenset(),
             iterations: int = 30, damping: float = 0.85) -> Iterator[tuple[float, str, str]]:
        """``(score, file, name)`` for each referenced definition, best first (ties by file, name),
        then the unreferenced ones in file order."""
        n = len(self.files)
        if n == 0:
            return iter(())
        mentioned = self.name_indexes(set(mentioned_names))
        weight = self.weight
        if mentioned and len(weight):
            weight = np.where(np.isin(self.name, mentioned), weight * MENTION_FACTOR, weight)
        out_total = np.bincount(self.src, weights=weight, minlength=n)
        teleport = self._personalisation(mentioned, mentioned_files)
        ranks = _pagerank(self.src, self.dst, weight, out_total, teleport, iterations, damping)
        share = np.divide(ranks, out_total, out=np.zeros(n), where=out_total > 0)
        scores = np.bincount(self.pair_of_edge, weights=share[self.src] * weight, minlength=len(self.pair_keys))
        keys = self.pair_keys
        extra: dict[int, float] = {}
        width = max(1, len(self.names))
        for name_index in mentioned:  # a named definition is shown even when nothing references it
            for d in self.definers_of(name_index):
                key = int(d) * width + name_index
                at = int(np.searchsorted(keys, key))
                if at < len(keys) and keys[at] == key:
                    scores[at] += 1.0
                else:
                    extra[key] = extra.get(key, 0.0) + 1.0
        if extra:
            keys = np.concatenate([keys, np.array(list(extra), dtype=np.int64)])
            scores = np.concatenate([scores, np.array(list(extra.values()))])
        order = np.lexsort((keys, -scores))  # best score first; ties in file, then name order
        return self._ranked(order, keys, scores, width)

    def _ranked(self, order, keys, scores, width) -> Iterator[tuple[float, str, str]]:
        for i in order:
            file_index, name_index = divmod(int(keys[i]), width)
            yield float(scores[i]), self.files[file_index], self.names[name_index]
        # A budget that outlasts the ranking (a small repository) shows the remaining
        # definitions too, in file order: a map of a few files should not come out empty.
        counts = np.diff(self.definers_ptr)
        every = self.definers_idx * width + np.repeat(np.arange(len(self.names), dtype=np.int64), counts)
        for key in np.setdiff1d(every, keys):
            file_index, name_index = divmod(int(key), width)
            yield 0.0, self.files[file_index], self.names[name_index]

    def _personalisation(self, mentioned: list[int], mentioned_files: set[str]) -> np.ndarray:
        n = len(self.files)
        chosen = {i for rel in mentioned_files if (i := _bisect(self.files, rel)) is not None}
        for name_index in mentioned:
            chosen.update(int(d) for d in self.definers_of(name_index))
        if not chosen:
            return np.full(n, 1.0 / n)
        vector = np.zeros(n)
        vector[sorted(chosen)] = 1.0 / len(chosen)
        return vector


def rank_definitions(tags: dict[str, FileTags], mentioned_names: set[str] = frozenset(),
                     mentioned_files: set[str] = frozenset()) -> list[tuple[float, str, str]]:
    """All ranked definitions of ``tags`` at once (building the graph on the way)."""
    return list(RefGraph.build(tags).rank(mentioned_names, mentioned_files))


def _pagerank(src, dst, weight, out_total, teleport, iterations, damping, tolerance: float = 1e-7) -> np.ndarray:
    n = len(teleport)
    norm = weight / out_total[src] if len(src) else weight
    dangling_nodes = np.flatnonzero(out_total == 0)
    ranks = teleport.copy()
    for _ in range(iterations):
        dangling = ranks[dangling_nodes].sum() if len(dangling_nodes) else 0.0
        new = (1 - damping + damping * dangling) * teleport
        new += np.bincount(dst, weights=damping * ranks[src] * norm, minlength=n)
        done = np.abs(new - ranks).sum() < tolerance
        ranks = new
        if done:
            break
    return ranks


def _bisect(sorted_items: list[str], item: str) -> int | None:
    from bisect import bisect_left

    i = bisect_left(sorted_items, item)
    return i if i < len(sorted_items) and sorted_items[i] == item else None


def _pack(items: list[str]) -> np.ndarray:
    # NUL never occurs in a path or an identifier, so it separates them
    return np.frombuffer("\0".join(items).encode("utf-8", "surrogateescape"), dtype=np.uint8)


def _unpack(array: np.ndarray) -> list[str]:
    text = array.tobytes().decode("utf-8", "surrogateescape")
    return text.split("\0") if text else []
