"""The archive's lineage: a text tree for the terminal and a PNG or SVG picture with scores."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path

from godel.archive import Node
from live_swe.errors import UserError
from live_swe.grading.metrics import METRICS, SHORT


def _children(nodes: list[Node]) -> dict[str | None, list[Node]]:
    ids = {n.id for n in nodes}
    kids: dict[str | None, list[Node]] = {}
    for node in nodes:
        parent = node.parent if node.parent in ids else None
        kids.setdefault(parent, []).append(node)
    return kids


def gpa_text(node: Node) -> str:
    """``gpa 0.72 [GF 1.00 LC 0.67 EE 0.50 PQ 0.67 PA 0.83]``, or empty when the node has none."""
    if node.gpa_mean is None:
        return ""
    parts = " ".join(f"{SHORT[m]} {node.gpa[m]:.2f}" if node.gpa.get(m) is not None else f"{SHORT[m]} -"
                     for m in METRICS)
    return f"gpa {node.gpa_mean:.2f} [{parts}]"


def _label(node: Node) -> str:
    score = f"{node.score:.2f} ({node.resolved}/{len(node.results)})" if node.score is not None else "unscored"
    note = node.summary or node.origin
    return "  ".join(part for part in (node.id, score, gpa_text(node), note) if part).rstrip()


def node_value(node: Node, metric: str | None) -> float | None:
    """What colours a node: its resolve rate, or with ``metric`` its mean score on that metric (``gpa``: all)."""
    if metric is None:
        return node.score
    return node.gpa_mean if metric == "gpa" else node.gpa.get(metric)


def text_tree(nodes: list[Node]) -> str:
    """The lineage as an indented tree, one node per line with its score."""
    if not nodes:
        return "the archive is empty; `live-swe evolve` adds nodes"
    kids = _children(nodes)
    lines: list[str] = []

    def walk(node: Node, prefix: str, last: bool, top: bool) -> None:
        lines.append(("" if top else prefix + ("└── " if last else "├── ")) + _label(node))
        below = kids.get(node.id, [])
        for index, child in enumerate(below):
            walk(child, "" if top else prefix + ("    " if last else "│   "), index == len(below) - 1, False)

    for root in kids.get(None, []):
        walk(root, "", True, True)
    return "\n".join(lines)


@dataclass
class _Placed:
    node: Node
    x: float
    depth: int


def layout(nodes: list[Node]) -> list[_Placed]:
    """Leaves left to right in tree order; each parent centred over its children."""
    kids = _children(nodes)
    placed: list[_Placed] = []
    next_leaf = [0.0]

    def place(node: Node, depth: int) -> float:
        below = kids.get(node.id, [])
        if below:
            xs = [place(child, depth + 1) for child in below]
            x = (min(xs) + max(xs)) / 2
        else:
            x = next_leaf[0]
            next_leaf[0] += 1
        placed.append(_Placed(node, x, depth))
        return x

    for root in kids.get(None, []):
        place(root, 0)
    return placed


def _colour(score: float | None) -> str:
    if score is None:
        return "#bbbbbb"
    red, green = int(220 * (1 - score) + 40 * score), int(60 * (1 - score) + 170 * score)
    return f"#{red:02x}{green:02x}50"


def svg(nodes: list[Node], title: str = "live-swe archive", metric: str | None = None) -> str:
    placed = layout(nodes)
    if not placed:
        raise UserError("the archive is empty; nothing to plot (`live-swe evolve` adds nodes)")
    dx, dy, margin, radius = 110, 90, 60, 26
    width = int(max(p.x for p in placed) * dx + 2 * margin + dx)
    height = int(max(p.depth for p in placed) * dy + 2 * margin + 40)
    where = {p.node.id: (margin + dx / 2 + p.x * dx, margin + 30 + p.depth * dy) for p in placed}
    best = max((p.node for p in placed if p.node.score is not None), key=lambda n: n.score, default=None)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{margin}" y="28" font-size="16" font-weight="bold">{escape(title)}</text>']
    for p in placed:
        if p.node.parent in where:
            (x1, y1), (x2, y2) = where[p.node.parent], where[p.node.id]
            parts.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#888" stroke-width="2"/>')
    for p in placed:
        x, y = where[p.node.id]
        stroke = ' stroke="#1f4fbf" stroke-width="4"' if best is not None and p.node.id == best.id else ' stroke="#333"'
        value = node_value(p.node, metric)
        score = f"{value:.2f}" if value is not None else "-"
        gpa = (f'<text x="{x:.0f}" y="{y + radius + 14:.0f}" font-size="10" text-anchor="middle" fill="#333">'
               f'gpa {p.node.gpa_mean:.2f}</text>' if p.node.gpa_mean is not None and metric is None else "")
        parts.append(f'<g><title>{escape(_label(p.node))}</title>'
                     f'<circle cx="{x:.0f}" cy="{y:.0f}" r="{radius}" fill="{_colour(value)}"{stroke}/>'
                     f'<text x="{x:.0f}" y="{y - 3:.0f}" font-size="12" text-anchor="middle" fill="white" '
                     f'font-weight="bold">{escape(p.node.id)}</text>'
                     f'<text x="{x:.0f}" y="{y + 12:.0f}" font-size="11" text-anchor="middle" fill="white">{score}</text>'
                     f'{gpa}</g>')
    parts.append("</svg>")
    return "\n".join(parts)


def png(nodes: list[Node], out: Path, title: str = "live-swe archive", metric: str | None = None) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("a PNG needs matplotlib (pip install 'live-swe[bench]'); or write an .svg instead") from None
    placed = layout(nodes)
    if not placed:
        raise UserError("the archive is empty; nothing to plot (`live-swe evolve` adds nodes)")
    where = {p.node.id: (p.x, -p.depth) for p in placed}
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * (max(p.x for p in placed) + 2)), max(3, 1.3 * (max(p.depth for p in placed) + 2))))
    for p in placed:
        if p.node.parent in where:
            (x1, y1), (x2, y2) = where[p.node.parent], where[p.node.id]
            ax.plot([x1, x2], [y1, y2], color="#888", zorder=1)
    for p in placed:
        x, y = where[p.node.id]
        value = node_value(p.node, metric)
        ax.scatter([x], [y], s=1400, color=_colour(value), edgecolors="#333", zorder=2)
        score = f"{value:.2f}" if value is not None else "-"
        ax.text(x, y, f"{p.node.id}\n{score}", ha="center", va="center", color="white", fontsize=9, zorder=3)
    ax.set_title(title)
    ax.axis("off")
    ax.margins(0.2)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)


def plot(nodes: list[Node], out: Path, title: str = "live-swe archive", metric: str | None = None) -> Path:
    """Write the lineage to ``out``: SVG for .svg, PNG (matplotlib) for .png. Nodes are coloured by
    their resolve rate, or with ``metric`` by their mean score on that GPA metric (``gpa``: all five)."""
    if metric is not None and metric not in ("gpa", *METRICS):
        raise UserError(f"--metric {metric}: use gpa or one of {', '.join(METRICS)}")
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise UserError(f"--out {out}: use a file name ending in .svg or .png")
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".svg":
        out.write_text(svg(nodes, title, metric))
    else:
        png(nodes, out, title, metric)
    return out
