"""``live-swe bench``: batch runs, evaluation, and the Docker images of a suite.

Only typer and the standard library at import time; the bench machinery (docker, swebench) is
imported inside the commands so ``live-swe --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import typer

from live_swe.cli.common import (
    CONTRACT_HELP,
    EXIT_INSTANCE_ERRORS,
    EXIT_INTERRUPTED,
    fail,
    friendly,
    print_json,
    with_archive_scaffolds,
)

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)

SUITE_HELP = "swebench-verified | swebench-lite | swebench-pro[:PATH] | local:NAME | PATH.{parquet,jsonl,json}"
EXECUTOR_HELP = ("thread: this machine's Docker engine; ray: one task per instance on a Ray cluster's nodes "
                 "that offer the `docker` resource (pip install 'live-swe[ray]').")
RAY_ADDRESS_HELP = "The Ray cluster (HOST:PORT, or auto); default: RAY_ADDRESS, then the one this machine is in."
TEMPLATE_HELP = ("Your own image names, e.g. 'sweb.eval.x86_64.{instance_id}:latest' ({hub_id}: '__' as '_1776_'); "
                 "default: the row's image, then the official and the locally built swebench names.")


@app.command("run")
@friendly
def run(
    suite: str = typer.Argument(..., help=SUITE_HELP),
    model: str = typer.Option(..., "--model", "-m", help="Model name (litellm name, scripted:PATH, ...)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (preds.jsonl, sessions, batch.json)."),
    workers: int = typer.Option(1, "--workers", "-w", help="Instances run at the same time "
                                "(--executor ray: at least the cluster's `docker` units)."),
    executor: str = typer.Option("thread", "--executor", help=EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    instances: str = typer.Option(None, "--instances", help="Instance ids, comma or space separated."),
    filter: str = typer.Option(None, "--filter", help="Regular expression on instance ids."),  # noqa: A002
    slice: str = typer.Option(None, "--slice", help="A:B of the selection, in suite order."),  # noqa: A002
    scaffold: str = typer.Option("seed", "--scaffold", help="Scaffold: seed | session:ID | path:DIR | archive:NODE."),
    redo: bool = typer.Option(False, "--redo", help="Run instances already in preds.jsonl again."),
    step_limit: int = typer.Option(None, "--step-limit", min=1, help="Steps per instance."),
    cost_limit: float = typer.Option(None, "--cost-limit", min=0, help="USD per instance (0: no limit)."),
    wall_time_limit: float = typer.Option(None, "--wall-time-limit", help="Seconds per instance."),
    command_timeout: float = typer.Option(None, "--command-timeout", help="Seconds per command."),
    total_cost_limit: float = typer.Option(None, "--total-cost-limit",
                                           help="USD for the whole batch (this folder's runs): no instance starts once spent."),
    image_template: str = typer.Option(None, "--image-template", help=TEMPLATE_HELP),
    skip_missing: bool = typer.Option(False, "--skip-missing", help="Run the instances whose image is present, "
                                      "record the others as failed (default: stop before anything runs)."),
    engine_wait: float = typer.Option(120, "--engine-wait", min=0, help="Seconds queued instances wait for a "
                                      "Docker engine that stopped answering before the batch stops."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    contract: list[Path] = typer.Option(None, "--contract", help=CONTRACT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only the summary as JSON, errors counted by kind."),
) -> None:
    """Run the agent on a suite, one container per instance; resumable. Budgets per instance:
    these options > LIVE_SWE_* variables > config.yaml `limits` > defaults. Exit code 0: every
    instance ran (submitted or not); 3: some failed (see `errors`); 130: interrupted."""
    from live_swe.bench.batch import run_batch
    from live_swe.config import load_settings

    with_archive_scaffolds()
    settings = load_settings({
        "limits.step_limit": step_limit, "limits.cost_limit": cost_limit,
        "limits.wall_time_limit": wall_time_limit, "limits.command_timeout": command_timeout,
    })
    summary = run_batch(suite, model=model, out=out, workers=workers, instances=instances, filter=filter,
                        slice=slice, scaffold=scaffold, redo=redo, limits=settings.limits,
                        total_cost_limit=total_cost_limit, image_template=image_template, skip_missing=skip_missing,
                        show_progress=not no_progress, engine_wait=engine_wait, contracts=tuple(contract or ()),
                        executor=executor, ray_address=ray_address)
    code = _batch_exit_code(summary)
    if as_json:
        print_json({**summary.to_json(records=False), "exit_code": code})
    else:
        _print_batch_summary(summary)
    if code:
        raise typer.Exit(code)


def _batch_exit_code(summary) -> int:
    if summary.interrupted:
        return 128 + summary.signal if summary.signal else EXIT_INTERRUPTED
    return 0 if summary.clean else EXIT_INSTANCE_ERRORS


def _print_batch_summary(summary) -> None:
    errors = ", ".join(f"{count} {kind}" for kind, count in sorted(summary.errors.items()))
    print(f"{summary.suite}: {summary.total} selected, {summary.skipped} already done, {summary.done} finished "
          f"({summary.submitted} submitted), {summary.failed} failed{f' ({errors})' if errors else ''}, "
          f"cost ${summary.cost:.4f}, {summary.elapsed:.1f} s -> {summary.out}/preds.jsonl")
    nodes = Counter(record["host"] + "/" + record["node"][:8] for record in summary.records if record.get("node"))
    if nodes:
        print("tasks per node: " + ", ".join(f"{node} {count}" for node, count in sorted(nodes.items())))
    if summary.stale:
        print(f"closed {summary.stale} session(s) a killed run left running (stale); their instances ran again")
    if summary.retried:
        print(f"ran {summary.retried} instance(s) again: the Docker engine went away under them")
    if summary.stopped:
        again = "" if summary.stopped_by_fault else " (rerun with a higher --total-cost-limit to go on)"
        print(f"stopped: {summary.stopped}; {summary.not_started} instance(s) not started{again}")
    if summary.failed:
        print(f"{summary.failed} instance(s) failed (their reasons: {summary.out}/results.jsonl); "
              "rerun the same command to run them again", file=sys.stderr)


@app.command("eval")
@friendly
def eval_(
    directory: Path = typer.Argument(None, help="A batch output directory (holds preds.jsonl)."),
    run_id: str = typer.Option(None, "--run-id", help="Names this evaluation's logs and containers."),
    as_json: bool = typer.Option(False, "--json", help="Print only {total, resolved, resolved_ids, rate, ci_low, ci_high, errors}."),
    pro_repo: Path = typer.Option(None, "--pro-repo", help="Checkout of the official SWE-bench Pro repository (run_scripts/)."),
    suite: str = typer.Option(None, "--suite", help="The suite the batch ran, when DIR has no batch.json."),
    gold: str = typer.Option(None, "--gold", help="Evaluate this suite's gold patches instead (with --out DIR)."),
    out: Path = typer.Option(None, "--out", "-o", help="Where --gold writes report.json and logs."),
    instances: str = typer.Option(None, "--instances", help="Only these instance ids (comma or space separated)."),
    filter: str = typer.Option(None, "--filter", help="Regular expression on instance ids."),  # noqa: A002
    slice: str = typer.Option(None, "--slice", help="A:B of the selection, in suite order."),  # noqa: A002
    image_template: str = typer.Option(None, "--image-template", help=TEMPLATE_HELP + " (DIR: the batch's own)"),
    workers: int = typer.Option(1, "--workers", "-w", help="Instances evaluated at the same time."),
    executor: str = typer.Option("thread", "--executor", help=EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    timeout: int = typer.Option(1800, "--timeout", help="Seconds allowed for one instance's tests."),
) -> None:
    """Grade predictions in Docker (official swebench harness; Pro run scripts); writes DIR/report.json
    and the harness's own run report next to it. Instances whose image is missing are listed, not graded.
    Exit code 0: every instance graded (resolved or not); 3: some could not be (see `errors`)."""
    from live_swe.bench.evaluate import REPORT_FILE, evaluate_batch, evaluate_gold

    selection = {"instances": instances, "filter": filter, "slice": slice, "image_template": image_template,
                 "executor": executor, "ray_address": ray_address}
    if gold:
        if directory is not None or out is None:
            fail("--gold SUITE takes no DIR argument but needs --out DIR")
        report = evaluate_gold(gold, out, run_id=run_id, pro_repo=pro_repo, workers=workers, timeout=timeout,
                               **selection)
        written = Path(out).resolve() / REPORT_FILE
    else:
        if directory is None:
            fail("give a batch directory (live-swe bench eval DIR) or --gold SUITE --out DIR")
        report = evaluate_batch(directory, suite_spec=suite, run_id=run_id, pro_repo=pro_repo, workers=workers,
                                timeout=timeout, **selection)
        written = Path(directory).resolve() / REPORT_FILE
    for line in report.missing_images:
        print(f"missing image: {line}", file=sys.stderr)
    if as_json:
        print(json.dumps(report.summary()))
    else:
        for outcome in report.outcomes:
            mark = "resolved  " if outcome.resolved else f"{outcome.status:<10}"
            print(f"  {mark} {outcome.instance_id}  {outcome.detail}")
        print(report.text())
        print(f"report: {written}")
        if report.harness_report:
            print(f"official report: {report.harness_report}")
    errors = report.errors()
    if errors:
        if not as_json:
            print(f"{sum(errors.values())} instance(s) could not be graded as resolved or unresolved "
                  f"({', '.join(f'{n} {kind}' for kind, n in sorted(errors.items()))}); see {written}",
                  file=sys.stderr)
        raise typer.Exit(EXIT_INSTANCE_ERRORS)


@app.command("images")
@friendly
def images(
    suite: str = typer.Argument(..., help=SUITE_HELP),
    instances: str = typer.Option(None, "--instances", help="Instance ids, comma or space separated."),
    filter: str = typer.Option(None, "--filter", help="Regular expression on instance ids."),  # noqa: A002
    slice: str = typer.Option(None, "--slice", help="A:B of the selection, in suite order."),  # noqa: A002
    image_template: str = typer.Option(None, "--image-template", help=TEMPLATE_HELP),
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
    selected = loaded.select_some(instances=instances, filter=filter, slice=slice)
    client = docker_client()
    statuses = image_statuses(loaded, client, selected, template=image_template)
    if build:
        wanted = [s.image for s in statuses if rebuild or not s.present]
        if wanted:
            started = time.monotonic()
            on_line = None if quiet else (lambda line: print(f"    {line}", file=sys.stderr))
            for image in wanted:
                print(f"building {image} ...", file=sys.stderr)
                build_images(loaded, client, [image], base=base or DEFAULT_BASE, on_line=on_line)
            print(f"built {len(wanted)} image(s) in {time.monotonic() - started:.1f} s", file=sys.stderr)
            statuses = image_statuses(loaded, client, selected, template=image_template)
    missing = [s for s in statuses if not s.present]
    for status in statuses:
        state = "present" if status.present else "MISSING"
        print(f"{state:<8} {status.image}  ({len(status.instance_ids)} instance(s))")
    print(f"{len(statuses) - len(missing)} of {len(statuses)} image(s) present for {loaded.name}")
    for status in missing:
        print(f"missing: {status.image}: {how_to_get(loaded, status.image, status)}", file=sys.stderr)
    if check and missing:
        raise typer.Exit(1)
