"""The Gödel engine's commands: ``validate``, ``evolve``, ``archive show|plot`` and ``scaffold promote``.

The engine (``godel``) builds on the kernel and never imports the command line; this module is
where the two meet. Like every command module it imports typer at the top and loads the engine
inside each command: the engine pulls pydantic and the kernel (about half a second), which
``live-swe --help`` must not pay for.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from live_swe.cli.bench_cmd import EXECUTOR_HELP, RAY_ADDRESS_HELP
from live_swe.cli.common import fail, friendly

archive_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)
scaffold_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)

EXIT_INTERRUPTED = 130


def _ids(values: list[str] | None) -> list[str]:
    return [part for value in values or [] for part in value.replace(",", " ").split() if part]


def _limits(step_limit: int | None, cost_limit: float | None):
    from live_swe.config import load_settings

    return load_settings({"limits.step_limit": step_limit, "limits.cost_limit": cost_limit}).limits


@friendly
def validate(
    scaffold: str = typer.Option(..., "--scaffold", help="The scaffold to validate (archive:NODE, path:DIR, session:ID)."),
    against: str = typer.Option("seed", "--against", help="The baseline scaffold."),
    suite: str = typer.Option(..., "--suite", help="local:local, swebench-verified, swebench-pro, ..."),
    instances: list[str] = typer.Option(None, "--instances", help="Instance ids (comma or space separated)."),
    filter_: str = typer.Option(None, "--filter", help="Regex on instance ids."),
    slice_: str = typer.Option(None, "--slice", help="Python slice A:B over the selection."),
    model: str = typer.Option(None, "--model", "-m", help="The model both scaffolds run with."),
    workers: int = typer.Option(1, "--workers", min=1),
    executor: str = typer.Option("thread", "--executor", help=EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    step_limit: int = typer.Option(None, "--step-limit", min=1),
    cost_limit: float = typer.Option(None, "--cost-limit", min=0, help="Per instance, USD."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run two scaffolds on the same instances and say whether the first is measurably better."""
    from godel.evaluation import BenchEvaluator
    from godel.validate import format_report
    from godel.validate import validate as run_validation
    from live_swe.bench.suites import load_suite
    from live_swe.config import load_settings
    from live_swe.models.resolve import check_model, default_model_name

    model = default_model_name(load_settings({"model": model}).model)
    check_model(model)  # an unknown provider or a missing key fails now, not in every instance
    chosen = load_suite(suite).select(instances=_ids(instances) or None, filter=filter_, slice=slice_)
    if not chosen:
        fail(f"{suite}: the selection matches no instance")
    evaluator = BenchEvaluator(suite, model, workers=workers, limits=_limits(step_limit, cost_limit),
                               show_progress=not as_json, run_id="validate", executor=executor, ray_address=ray_address)
    try:
        result = run_validation(scaffold, against, suite=suite, model=model,
                                instance_ids=[i.instance_id for i in chosen], evaluate=evaluator, seed=seed)
    except KeyboardInterrupt:
        print("live-swe: interrupted; rerun the same command to continue (finished instances are kept)",
              file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    print(json.dumps(result.to_json()) if as_json else format_report(result))


@friendly
def evolve(
    suite: str = typer.Option(..., "--suite", help="The suite to evolve on (split into selection and report)."),
    model: str = typer.Option(None, "--model", "-m", help="The model that solves the suite's tasks."),
    generations: int = typer.Option(..., "--generations", "-g", min=0),
    children: int = typer.Option(..., "--children", "-k", min=1, help="Children per generation."),
    budget: float = typer.Option(None, "--budget", min=0, help="Stop (resumably) once this many USD are spent."),
    improver_model: str = typer.Option(None, "--improver-model", help="The model that edits scaffolds (default --model)."),
    selection: str = typer.Option("dgm", "--selection", help="Parent selection: dgm or clade."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split and of parent selection."),
    scaffold: str = typer.Option("seed", "--scaffold", help="The root scaffold."),
    instances: list[str] = typer.Option(None, "--instances", help="Restrict the suite before the split."),
    report_fraction: float = typer.Option(0.34, "--report-fraction", help="Held-out share of the instances."),
    stages: str = typer.Option("3,8", "--stages", help="Instances per evaluation stage (growing)."),
    thresholds: str = typer.Option("0.34,0", "--thresholds", help="Minimum resolved rate to pass each stage."),
    workers: int = typer.Option(1, "--workers", min=1),
    executor: str = typer.Option("thread", "--executor", help=EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    step_limit: int = typer.Option(None, "--step-limit", min=1),
    cost_limit: float = typer.Option(None, "--cost-limit", min=0, help="Per agent run, USD."),
    as_json: bool = typer.Option(False, "--json", help="Print the final state as JSON."),
) -> None:
    """Evolve an archive of scaffolds: select, diagnose, improve, gate, stage, archive. Rerun to resume."""
    from godel.evaluation import BenchEvaluator
    from godel.evolve import EvolveConfig, Evolver
    from godel.improve import AgentImprover
    from godel.selection import SELECTIONS
    from godel.staging import parse_stages
    from live_swe.config import load_settings
    from live_swe.models.resolve import check_model, default_model_name

    if selection not in SELECTIONS:
        fail(f"--selection {selection!r}: use one of {', '.join(SELECTIONS)}")
    model = default_model_name(load_settings({"model": model}).model)
    for name in {model, improver_model or model}:  # before the archive or a session is written
        check_model(name)
    limits = _limits(step_limit, cost_limit)
    config = EvolveConfig(
        suite=suite, model=model, improver_model=improver_model or model, generations=generations,
        children=children, budget=budget, selection=selection, seed=seed, scaffold=scaffold,
        report_fraction=report_fraction, stages=parse_stages(stages, thresholds), instances=_ids(instances) or None,
    )
    evaluator = BenchEvaluator(suite, model, workers=workers, limits=limits, show_progress=False, run_id="evolve",
                               executor=executor, ray_address=ray_address)
    say = (lambda line: None) if as_json else (lambda line: print(line, file=sys.stderr, flush=True))
    evolver = Evolver(config, evaluate=evaluator, improve=AgentImprover(config.improver_model, limits=limits),
                      instance_ids=evaluator.instance_ids, say=say)
    try:
        state = evolver.run()
    except KeyboardInterrupt:
        print(f"live-swe: interrupted; state of {evolver.state.run_id} is saved, rerun the same command to continue",
              file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        print(json.dumps(state.model_dump()))
        return
    from godel.plot import text_tree

    print(text_tree(evolver.run_nodes()))
    best = evolver.best()
    if best is not None and state.root and best.id != state.root:
        print(f"\nbest: {best.id}; measure it on the held-out report split with:\n"
              f"  live-swe validate --scaffold archive:{best.id} --against archive:{state.root} --suite {suite} "
              f"--model {model} --instances {','.join(state.report_split)}")
    if state.status == "budget":
        raise typer.Exit(1)



def _nodes(run: str | None):
    from godel.archive import Archive

    nodes = Archive.default().nodes()
    return [n for n in nodes if n.run == run] if run else nodes


@archive_app.command("show")
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


@archive_app.command("plot")
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



@scaffold_app.command("promote")
@friendly
def promote(
    ref: str = typer.Argument(..., help="archive:NODE, path:DIR, session:ID (or seed to go back)."),
    force: bool = typer.Option(False, "--force", help="Promote without a recorded 'better' validation."),
) -> None:
    """Write `scaffold: REF` into the user's config, if a validation found REF better."""
    from godel.promote import promote as do_promote
    from live_swe.config import config_path

    done = do_promote(ref, force=force)
    if done.validation:
        v = done.validation
        why = (f"validation {v['id']}: {v.get('candidate_resolved')}/{v.get('n')} vs "
               f"{v.get('baseline_resolved')}/{v.get('n')} against {v.get('against')}, p={v.get('p_value'):.4g}")
    else:
        why = "forced, without a 'better' validation" if done.forced else "the shipped seed scaffold"
    print(f"default scaffold is now {done.ref} ({why}); written to {config_path()}", file=sys.stderr)
    print(done.ref)
