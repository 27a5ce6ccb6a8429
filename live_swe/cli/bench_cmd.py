"""``live-swe bench``: batch runs, evaluation, and the Docker images of a suite.

Only typer and the standard library at import time; the bench machinery (docker, swebench) is
imported inside the commands so ``live-swe --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from live_swe.cli.common import fail, friendly

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)

SUITE_HELP = "swebench-verified | swebench-lite | swebench-pro[:PATH] | local:NAME | PATH.{parquet,jsonl,json}"


@app.command("run")
@friendly
def run(
    suite: str = typer.Argument(..., help=SUITE_HELP),
    model: str = typer.Option(..., "--model", "-m", help="Model name (litellm name, scripted:PATH, ...)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (preds.jsonl, sessions, batch.json)."),
    workers: int = typer.Option(1, "--workers", "-w", help="Instances run at the same time."),
    instances: str = typer.Option(None, "--instances", help="Instance ids, comma or space separated."),
    filter: str = typer.Option(None, "--filter", help="Regular expression on instance ids."),  # noqa: A002
    slice: str = typer.Option(None, "--slice", help="A:B of the selection, in suite order."),  # noqa: A002
    scaffold: str = typer.Option("seed", "--scaffold", help="Scaffold: seed | session:ID | path:DIR | archive:NODE."),
    redo: bool = typer.Option(False, "--redo", help="Run instances already in preds.jsonl again."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> None:
    """Run the agent on a suite, one container per instance; resumable."""
    from live_swe.bench.batch import run_batch

    summary = run_batch(suite, model=model, out=out, workers=workers, instances=instances, filter=filter,
                        slice=slice, scaffold=scaffold, redo=redo, show_progress=not no_progress)
    print(f"{summary.suite}: {summary.total} selected, {summary.skipped} already done, {summary.done} finished "
          f"({summary.submitted} submitted), {summary.failed} failed, cost ${summary.cost:.4f}, "
          f"{summary.elapsed:.1f} s -> {summary.out}/preds.jsonl")
    if summary.interrupted:
        raise typer.Exit(130)


@app.command("eval")
@friendly
def eval_(
    directory: Path = typer.Argument(None, help="A batch output directory (holds preds.jsonl)."),
    run_id: str = typer.Option(None, "--run-id", help="Names this evaluation's logs and containers."),
    as_json: bool = typer.Option(False, "--json", help="Print only {total, resolved, resolved_ids, rate, ci_low, ci_high}."),
    pro_repo: Path = typer.Option(None, "--pro-repo", help="Checkout of the official SWE-bench Pro repository (run_scripts/)."),
    suite: str = typer.Option(None, "--suite", help="The suite the batch ran, when DIR has no batch.json."),
    gold: str = typer.Option(None, "--gold", help="Evaluate this suite's gold patches instead (with --out DIR)."),
    out: Path = typer.Option(None, "--out", "-o", help="Where --gold writes report.json and logs."),
    instances: str = typer.Option(None, "--instances", help="With --gold: only these instance ids."),
    workers: int = typer.Option(1, "--workers", "-w", help="Instances evaluated at the same time."),
    timeout: int = typer.Option(1800, "--timeout", help="Seconds allowed for one instance's tests."),
) -> None:
    """Grade predictions in Docker (official swebench harness; Pro run scripts); writes DIR/report.json."""
    from live_swe.bench.evaluate import evaluate_batch, evaluate_gold

    if gold:
        if directory is not None or out is None:
            fail("--gold SUITE takes no DIR argument but needs --out DIR")
        report = evaluate_gold(gold, out, run_id=run_id, pro_repo=pro_repo, workers=workers, timeout=timeout,
                               instances=instances)
        written = Path(out).resolve() / "report.json"
    else:
        if directory is None:
            fail("give a batch directory (live-swe bench eval DIR) or --gold SUITE --out DIR")
        report = evaluate_batch(directory, suite_spec=suite, run_id=run_id, pro_repo=pro_repo, workers=workers,
                                timeout=timeout)
        written = Path(directory).resolve() / "report.json"
    if as_json:
        print(json.dumps(report.summary()))
        return
    for outcome in report.outcomes:
        mark = "resolved  " if outcome.resolved else f"{outcome.status:<10}"
        print(f"  {mark} {outcome.instance_id}  {outcome.detail}")
    print(report.text())
    print(f"report: {written}")


@app.command("images")
@friendly
def images(
    suite: str = typer.Argument(..., help=SUITE_HELP),
    check: bool = typer.Option(False, "--check", help="Exit 1 when any image is missing."),
    build: bool = typer.Option(False, "--build", help="Build the missing images of a local suite."),
    rebuild: bool = typer.Option(False, "--rebuild", help="With --build: build all of them again."),
    base: str = typer.Option(None, "--base", help="Base image for local Dockerfiles (ARG BASE; default python:3.11-slim)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No build output."),
) -> None:
    """Which Docker images a suite needs and which are present; build those of local suites."""
    import time

    from live_swe.bench.images import DEFAULT_BASE, build_images, docker_client, how_to_get, image_statuses
    from live_swe.bench.suites import load_suite

    loaded = load_suite(suite)
    client = docker_client()
    statuses = image_statuses(loaded, client)
    if build:
        wanted = [s.image for s in statuses if rebuild or not s.present]
        if wanted:
            started = time.monotonic()
            on_line = None if quiet else (lambda line: print(f"    {line}", file=sys.stderr))
            for image in wanted:
                print(f"building {image} ...", file=sys.stderr)
                build_images(loaded, client, [image], base=base or DEFAULT_BASE, on_line=on_line)
            print(f"built {len(wanted)} image(s) in {time.monotonic() - started:.1f} s", file=sys.stderr)
            statuses = image_statuses(loaded, client)
    missing = [s for s in statuses if not s.present]
    for status in statuses:
        state = "present" if status.present else "MISSING"
        print(f"{state:<8} {status.image}  ({len(status.instance_ids)} instance(s))")
    print(f"{len(statuses) - len(missing)} of {len(statuses)} image(s) present for {loaded.name}")
    for status in missing:
        print(f"missing: {status.image}: {how_to_get(loaded, status.image)}", file=sys.stderr)
    if check and missing:
        raise typer.Exit(1)
