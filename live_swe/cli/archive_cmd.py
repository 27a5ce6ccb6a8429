"""``live-swe archive show`` and ``live-swe archive plot``: the lineage of evolved scaffolds."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from live_swe.cli.common import friendly

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)


def _nodes(run: str | None):
    from godel.archive import Archive

    nodes = Archive.default().nodes()
    return [n for n in nodes if n.run == run] if run else nodes


@app.command("show")
@friendly
def show(
    run: str = typer.Option(None, "--run", help="Only the nodes of one evolve run."),
    node: str = typer.Option(None, "--node", help="One node: its metadata and its change against its parent."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The archive as a tree, with each node's resolve rate and mean GPA scores on the selection split."""
    from godel.archive import Archive
    from godel.plot import text_tree

    archive = Archive.default()
    if node:
        found = archive.get(node)
        if as_json:
            print(json.dumps(found.model_dump()))
        else:
            print(f"{found.id}  parent {found.parent or '-'}  score {found.score}  cost ${found.cost:.4f}  {found.origin}")
            if found.gpa_mean is not None:
                from godel.plot import gpa_text

                print(gpa_text(found))
            print(found.summary)
            print(archive.diff(found.id))
        return
    nodes = _nodes(run)
    if as_json:
        print(json.dumps([{**n.model_dump(exclude={"task", "sessions"}), "score": n.score, "gpa_mean": n.gpa_mean}
                          for n in nodes]))
        return
    print(text_tree(nodes))
    for state_path in sorted(archive.runs_dir.glob("*/state.json")) if archive.runs_dir.is_dir() else []:
        if run and state_path.parent.name != run:
            continue
        state = json.loads(state_path.read_text())
        statuses = [c["status"] for c in state.get("children", {}).values()]
        counts = ", ".join(f"{statuses.count(s)} {s}" for s in ("accepted", "stopped", "rejected") if s in statuses)
        print(f"{state['run_id']} ({state['config']['suite']}): {state['status']}, "
              f"{len(statuses)} children ({counts or 'none yet'}), ${state.get('spent', 0):.2f} spent")


@app.command("plot")
@friendly
def plot(
    out: Path = typer.Option(..., "--out", "-o", help="lineage.svg or lineage.png"),
    run: str = typer.Option(None, "--run", help="Only the nodes of one evolve run."),
    metric: str = typer.Option(None, "--metric", help="Colour nodes by a GPA metric's mean score (gpa: all five, "
                               "or goal_fulfillment, logical_consistency, execution_efficiency, plan_quality, "
                               "plan_adherence) instead of the resolve rate."),
) -> None:
    """Draw the lineage with scores (SVG, or PNG with matplotlib)."""
    from godel.plot import plot as draw

    label = f" ({run})" if run else ""
    label += f", coloured by {metric}" if metric else ""
    written = draw(_nodes(run), out, title=f"live-swe archive{label}", metric=metric)
    print(written)
