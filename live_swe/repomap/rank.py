"""Aider-style ranking: PageRank over a file graph whose edges are identifier references.

A file that references a name points at each file that defines it, weighted by how often it
uses the name and by how telling the name is. PageRank, personalised towards the files and
names the task mentions, ranks files; each file's rank is then shared out along its edges to the
definitions it references, and those definitions are ranked by what they received.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from live_swe.repomap.tags import FileTags

MAX_DEFINERS = 10  # a name defined in more files than this (get, run, setUp) links nothing useful
_WORDY = re.compile(r"^(?:[a-z0-9]+_[a-z0-9_]+|[A-Za-z][a-z0-9]+[A-Z]\w*)$")


def name_weight(name: str, definers: int, mentioned: set[str]) -> float:
    weight = 1.0
    if name in mentioned:
        weight *= 10
    if len(name) >= 8 and _WORDY.match(name):
        weight *= 10  # long snake_case / CamelCase names are specific
    if name.startswith("_"):
        weight *= 0.1
    if definers > 5:
        weight *= 0.1
    return weight


def rank_definitions(
    tags: dict[str, FileTags],
    mentioned_names: set[str] = frozenset(),
    mentioned_files: set[str] = frozenset(),
    iterations: int = 30,
    damping: float = 0.85,
) -> list[tuple[float, str, str]]:
    """``(score, file, name)`` for each referenced definition, best first."""
    definers: dict[str, list[str]] = defaultdict(list)
    for rel, file_tags in tags.items():
        for name in {d[0] for d in file_tags.defs}:
            definers[name].append(rel)
    files = sorted(tags)
    index = {rel: i for i, rel in enumerate(files)}
    # edges[src] = {(dst, name): weight}
    edges: list[dict[tuple[int, str], float]] = [dict() for _ in files]
    # Per linking name: its weight and the indexes of the files defining it (computed once).
    linkable = {
        name: (name_weight(name, len(where), mentioned_names), [index[rel] for rel in where])
        for name, where in definers.items() if len(where) <= MAX_DEFINERS
    }
    sqrt = math.sqrt
    for src_rel, file_tags in tags.items():
        src = index[src_rel]
        out = edges[src]
        for name in file_tags.refs.keys() & linkable.keys():
            base, targets = linkable[name]
            weight = base * sqrt(file_tags.refs[name])
            for dst in targets:
                if dst != src:
                    out[(dst, name)] = weight
    ranks = _pagerank(files, edges, _personalisation(files, index, definers, mentioned_names, mentioned_files),
                      iterations, damping)
    scores: dict[tuple[int, str], float] = defaultdict(float)
    for src, out in enumerate(edges):
        total = sum(out.values())
        if not total:
            continue
        share = ranks[src] / total
        for key, weight in out.items():
            scores[key] += share * weight
    for name in mentioned_names:  # a named definition is shown even when nothing references it
        for rel in definers.get(name, ())[:MAX_DEFINERS]:
            scores[(index[rel], name)] += 1.0
    ranked = [(score, files[dst], name) for (dst, name), score in scores.items()]
    ranked.sort(key=lambda item: (-item[0], item[1], item[2]))
    return ranked


def _personalisation(files, index, definers, mentioned_names, mentioned_files) -> list[float] | None:
    chosen = {index[rel] for rel in mentioned_files if rel in index}
    for name in mentioned_names:
        chosen.update(index[rel] for rel in definers.get(name, ())[:MAX_DEFINERS])
    if not chosen:
        return None
    vector = [0.0] * len(files)
    for i in chosen:
        vector[i] = 1.0 / len(chosen)
    return vector


def _pagerank(files, edges, personal, iterations, damping, tolerance: float = 1e-7) -> list[float]:
    n = len(files)
    if n == 0:
        return []
    teleport = personal or [1.0 / n] * n
    # Collapse per-name edges into one weight per (src, dst), normalised per source.
    sources, targets, weights = [], [], []
    dangling_nodes = []
    for src, out in enumerate(edges):
        merged: dict[int, float] = defaultdict(float)
        for (dst, _name), weight in out.items():
            merged[dst] += weight
        total = sum(merged.values())
        if not total:
            dangling_nodes.append(src)
        for dst, weight in merged.items():
            sources.append(src)
            targets.append(dst)
            weights.append(weight / total)
    try:
        import numpy
    except ImportError:
        return _pagerank_python(n, sources, targets, weights, dangling_nodes, teleport, iterations, damping, tolerance)
    src_a, dst_a, w_a = numpy.array(sources, dtype=numpy.int64), numpy.array(targets, dtype=numpy.int64), numpy.array(weights)
    tele = numpy.array(teleport)
    ranks = tele.copy()
    dangling_a = numpy.array(dangling_nodes, dtype=numpy.int64)
    for _ in range(iterations):
        dangling = ranks[dangling_a].sum() if len(dangling_a) else 0.0
        new = (1 - damping + damping * dangling) * tele
        new += numpy.bincount(dst_a, weights=damping * ranks[src_a] * w_a, minlength=n)
        done = numpy.abs(new - ranks).sum() < tolerance
        ranks = new
        if done:
            break
    return ranks.tolist()


def _pagerank_python(n, sources, targets, weights, dangling_nodes, teleport, iterations, damping, tolerance):
    ranks = list(teleport)
    links = list(zip(sources, targets, weights, strict=True))
    for _ in range(iterations):
        dangling = sum(ranks[i] for i in dangling_nodes)
        scale = 1 - damping + damping * dangling
        new = [scale * t for t in teleport]
        for src, dst, weight in links:
            new[dst] += damping * ranks[src] * weight
        done = sum(abs(a - b) for a, b in zip(new, ranks, strict=True)) < tolerance
        ranks = new
        if done:
            break
    return ranks
