"""Headless batch runs: one container per instance, the agent inside, one prediction line per instance.

Layout of an output directory ``DIR``::

    batch.json      the batch's id (its containers carry the label live-swe.batch=<id>) and settings
    preds.jsonl     SWE-bench predictions, one line per finished instance (appended, fsync'd)
    results.jsonl   one record per instance attempt: status, reason, steps, cost, timings
    sessions/<id>/  each instance's session (events, patch, scaffold history)

A finished instance is one whose agent reached an end (submitted, or stopped by a budget or by
format errors); it goes to ``preds.jsonl`` and is skipped next time unless ``redo``. A failed one
(missing image, engine or model failure, any exception) is only recorded in ``results.jsonl``, so
the next run tries it again. ``kill -9`` loses only the instances in flight (the next run closes
their sessions as stale and runs them again); Ctrl-C, SIGTERM and SIGHUP stop the workers and remove
this batch's containers, and ``run_batch`` returns with ``interrupted`` set. An instance starts only
once the Docker engine answers; one the engine went away under runs again once it is back, and an
engine that stays away stops the batch (``faults``). Each failed record says its ``error_kind``.

Images are looked up before anything runs (``images.image_statuses``): a missing one that cannot
be pulled stops the batch with what to run to get it, unless ``skip_missing``. Each instance runs
with the kernel's budgets; ``total_cost_limit`` caps what the output directory's runs spend in
all (``results.jsonl``): once it is spent no further instance starts.

The work of one instance is ``_Batch.run_one(job)``: an ``InstanceJob`` (the instance, its image,
its budgets) in, one record out; the driver writes the records, so it can run anywhere.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import secrets
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from live_swe import events as ev
from live_swe.bench.faults import (
    ENGINE_RETRIES,
    ENGINE_WAIT_S,
    EngineWatch,
    engine_address,
    error_kind,
    mark_stale_sessions,
)
from live_swe.bench.images import (
    check_template,
    how_to_get,
    image_statuses,
    instance_images,
    missing_images_error,
)
from live_swe.bench.preds import PREDS_FILE, RESULTS_FILE, JsonlAppender, read_jsonl, read_preds
from live_swe.bench.progress import BatchProgress
from live_swe.bench.ray_cluster import check_executor
from live_swe.bench.ray_cluster import connect as connect_ray
from live_swe.bench.suites import Instance, Suite, load_suite, task_text
from live_swe.config import KernelLimits
from live_swe.contracts.diffs import graded_test_files
from live_swe.contracts.load import read as read_contract
from live_swe.environments._docker_engine import connect, import_docker, registry_reachable
from live_swe.environments.base import EnvironmentError_
from live_swe.environments.docker import remove_leftover_containers
from live_swe.errors import UserError
from live_swe.infra import files
from live_swe.models.base import Model, ModelError, ModelWrapper
from live_swe.models.resolve import make_model
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.scaffolding.refs import materialize
from live_swe.session.store import FINISHED, RunStatus, SessionStore

BATCH_FILE = "batch.json"
LOCK_FILE = ".batch.lock"
SESSIONS_DIR = "sessions"
BATCH_LABEL = "live-swe.batch"
FINISHED_STATUSES = FINISHED
ModelFactory = Callable[[str, Instance], Model]


@dataclass
class BatchSummary:
    suite: str
    out: Path
    total: int  # instances selected
    done: int = 0  # finished in this run (written to preds.jsonl)
    submitted: int = 0  # of those, submitted by the agent
    failed: int = 0  # ended in an error (recorded in results.jsonl, retried next time)
    skipped: int = 0  # already in preds.jsonl
    cost: float = 0.0
    interrupted: bool = False
    elapsed: float = 0.0
    not_started: int = 0  # left out because the total cost limit was spent
    stopped: str = ""  # why instances were left out, when they were
    spent_before: float = 0.0  # what earlier runs in this directory spent (results.jsonl)
    errors: dict[str, int] = field(default_factory=dict)  # failed instances by error_kind (faults.ERROR_KINDS)
    retried: int = 0  # attempts run again because the Docker engine went away under them
    stale: int = 0  # sessions a killed run left `running`, closed by this run (their instances run again)
    signal: int = 0  # the signal that interrupted the batch (0: Ctrl-C, or none)
    records: list[dict[str, Any]] = field(default_factory=list)  # this run's per-instance records

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        self.cost += float(record.get("cost") or 0.0)
        if record.get("finished"):
            self.done += 1
            self.submitted += record.get("status") == RunStatus.SUBMITTED
        elif record.get("status") != RunStatus.INTERRUPTED:
            self.failed += 1
            kind = record.get("error_kind") or "internal"
            self.errors[kind] = self.errors.get(kind, 0) + 1

    @property
    def clean(self) -> bool:
        """Every instance reached an end (submitted or not) and none was left out by a fault."""
        return not (self.failed or self.interrupted or self.stopped_by_fault)

    @property
    def stopped_by_fault(self) -> bool:
        return bool(self.not_started and self.errors.get("engine"))

    def to_json(self, *, records: bool = True) -> dict[str, Any]:
        data = asdict(self)
        data["out"] = str(self.out)
        if not records:
            data.pop("records")
        return data


class _StoppableModel(ModelWrapper):
    """The instance's model, refusing to answer once the batch is stopping (ends the agent fast);
    it books the time spent waiting for answers (the record's ``timings.model``)."""

    def __init__(self, model: Model, stop: threading.Event):
        super().__init__(model)
        self._stop = stop
        self.seconds = 0.0
        self.failed = False  # the model itself raised (an error_kind of "model")

    def query(self, messages, *, tools=None, on_token=None):
        if self._stop.is_set():
            raise ModelError("the batch was interrupted")
        started = time.monotonic()
        try:
            return super().query(messages, tools=tools, on_token=on_token)
        except Exception:
            self.failed = True
            raise
        finally:
            self.seconds += time.monotonic() - started


class _ModelMaker:
    """Makes an instance's model (the runner asks for it by name) and keeps it for its booked time."""

    def __init__(self, instance: Instance, factory: ModelFactory | None, stop: threading.Event):
        self.instance = instance
        self.factory = factory
        self.stop = stop
        self.made: list[_StoppableModel] = []

    def __call__(self, name: str) -> Model:
        if self.factory is not None:
            model = self.factory(name, self.instance)
        else:
            model = make_model(name)
        self.made.append(_StoppableModel(model, self.stop))
        return self.made[-1]

    @property
    def seconds(self) -> float:
        return sum(model.seconds for model in self.made)

    @property
    def failed(self) -> bool:
        return any(model.failed for model in self.made)


class _DirLock:
    """One batch process per output directory (released by the OS if the process dies)."""

    def __init__(self, out: Path):
        self.path = out / LOCK_FILE
        self._handle = None

    def __enter__(self) -> _DirLock:
        import fcntl

        self._handle = self.path.open("a+")
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._handle.seek(0)
            holder = self._handle.read().strip() or "another process"
            self._handle.close()
            raise UserError(f"{self.path.parent}: another batch ({holder}) is writing there; "
                            "wait for it or use another --out directory") from None
        import os

        self._handle.truncate(0)
        self._handle.write(f"pid {os.getpid()}")
        self._handle.flush()
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:
            self._handle.close()


def _batch_info(out: Path, suite_spec: str, model: str, scaffold: str, **settings: Any) -> dict[str, Any]:
    """The directory's batch record; its id is stable so a rerun can find the containers of a killed run."""
    path = out / BATCH_FILE
    info: dict[str, Any] = {}
    if path.exists():
        try:
            info = json.loads(path.read_text())
        except ValueError:
            info = {}
    if not isinstance(info, dict) or not info.get("batch_id"):
        info = {"batch_id": "b" + secrets.token_hex(6), "created_at": _now()}
    info.update(suite=portable_spec(suite_spec), model=model, scaffold=scaffold, **settings, updated_at=_now())
    files.write_atomic(path, json.dumps(info, indent=2), mode=0o644)
    return info


def portable_spec(spec: str) -> str:
    """The suite spec with a relative path made absolute, so ``bench eval`` works from any directory."""
    kind, sep, value = spec.partition(":")
    if sep and kind in ("swebench-verified", "swebench-lite", "swebench-pro", "local"):
        path = Path(value).expanduser()
        if value and not path.is_absolute() and ("/" in value or path.suffix) and path.exists():
            return f"{kind}:{path.resolve()}"
        return spec
    path = Path(spec).expanduser()
    return str(path.resolve()) if not path.is_absolute() and path.exists() else spec


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return text[:2000]


class _Engine:
    """The Docker engine as the batch needs it: image presence and removing the batch's containers."""

    def __init__(self):
        self._errors = import_docker().errors
        self.client = connect(timeout=60)
        self._lock = threading.Lock()
        self.watch = EngineWatch(self._ping, wait_s=ENGINE_WAIT_S)

    def _ping(self) -> None:
        """Ping over a new connection: an engine shutting down still answers on the ones it has."""
        client = import_docker().from_env(timeout=10)
        try:
            client.ping()
        finally:
            client.close()

    def has_image(self, image: str) -> bool:
        with self._lock:
            try:
                self.client.api.inspect_image(image)
                return True
            except self._errors.ImageNotFound:
                return False
            except self._errors.DockerException as exc:
                raise EnvironmentError_(f"the Docker engine could not be asked about {image!r}: {exc}") from None

    def remove_batch_containers(self, batch_id: str) -> list[str]:
        try:
            return remove_leftover_containers({BATCH_LABEL: batch_id})
        except Exception:  # noqa: BLE001 - best effort; the containers also die with this process
            return []


@dataclass(frozen=True)
class InstanceJob:
    """One instance's run: the instance, the image it runs in, and its budgets. ``missing`` says why
    its image cannot be had (the instance then fails at once, with what to do)."""

    instance: Instance
    image: str
    limits: KernelLimits
    missing: str = ""
    engine_retries: int = 0  # times it was run again because the engine went away under it


class _Batch:
    """The per-instance work, shared by the worker threads."""

    def __init__(self, *, suite: Suite, suite_spec: str, model: str, out: Path, batch_id: str, scaffold: str,
                 model_factory: ModelFactory | None, engine: _Engine, contracts: tuple[Path, ...] = ()):
        self.suite = suite
        self.suite_spec = suite_spec
        self.model = model
        self.out = out
        self.batch_id = batch_id
        self.scaffold = scaffold
        self.contracts = list(contracts)
        self.model_factory = model_factory
        self.engine = engine
        self.store = SessionStore(out / SESSIONS_DIR)
        self.stop = threading.Event()
        self.preds = JsonlAppender(out / PREDS_FILE)
        self.results = JsonlAppender(out / RESULTS_FILE)
        self._ids_lock = threading.Lock()

    def close(self) -> None:
        self.preds.close()
        self.results.close()

    # -- pieces

    def _session_id(self, instance: Instance) -> str:
        """``<instance id>``, or ``<instance id>.N`` for the Nth attempt (sessions are never overwritten)."""
        base = re.sub(r"[^A-Za-z0-9._-]", "_", instance.instance_id)[:150] or "instance"
        with self._ids_lock:
            candidate, attempt = base, 1
            while (self.store.root / candidate).exists():
                attempt += 1
                candidate = f"{base}.{attempt}"
            (self.store.root / candidate).parent.mkdir(parents=True, exist_ok=True)
            return candidate

    def _image_present(self, image: str) -> bool:
        try:
            return self.engine.has_image(image)
        except EnvironmentError_:
            return True  # unknown: keep the original reason

    def _model_for(self, instance: Instance) -> _ModelMaker:
        return _ModelMaker(instance, self.model_factory, self.stop)

    def record(self, record: dict[str, Any], patch: str) -> None:
        """Write one instance's outcome: its prediction when it finished, and its record."""
        if record["finished"]:
            self.preds.append({
                "instance_id": record["instance_id"],
                "model_name_or_path": self.model,
                "model_patch": patch,
                "status": record["status"],
                "steps": record["steps"],
                "cost": record["cost"],
                "session": record["session"],
            })
        self.results.append(record)

    # -- one instance

    def run_one(self, job: InstanceJob) -> tuple[dict[str, Any], str]:
        """Run the agent on one instance: its record and its patch. Never raises."""
        instance, image = job.instance, job.image
        record: dict[str, Any] = {
            "instance_id": instance.instance_id, "status": RunStatus.ERROR, "finished": False, "reason": "",
            "session": None, "steps": 0, "cost": 0.0, "image": image, "model": self.model,
        }
        marks: dict[str, float] = {"start": time.monotonic()}
        models = self._model_for(instance)
        patch = ""
        failure: BaseException | None = None
        missing_image = bool(job.missing)
        try:
            patch = self._attempt(job, record, marks, models)
        except _Interrupted:
            pass
        except _EngineGone:
            record.update(reason=f"not started: {self.engine.watch.gone_message()}", engine="gone", error_kind="engine")
        except EnvironmentError_ as exc:
            failure = exc
            record["reason"] = _reason(exc)
            if not job.missing and not self._image_present(image):
                missing_image = True
                record["reason"] = (f"Docker image {image!r} for {instance.instance_id} is not on this machine "
                                    f"({record['reason']})")
        except Exception as exc:  # noqa: BLE001 - one instance never stops the batch
            failure = exc
            record["reason"] = f"{exc.__class__.__name__}: {_reason(exc)}"
        if record["status"] == RunStatus.ERROR and "error_kind" not in record and not self.stop.is_set():
            self._classify(record, job, failure, model_failed=models.failed, missing_image=missing_image)
        marks["return"] = time.monotonic()
        if self.stop.is_set() and not record["finished"]:
            record.update(status=RunStatus.INTERRUPTED, reason=record["reason"] or "the batch was interrupted")
            record.pop("error_kind", None)
        record["elapsed"] = round(marks["return"] - marks["start"], 3)
        record["timings"] = _timings(marks, models.seconds)
        record["finished_at"] = _now()
        return record, patch

    def _attempt(self, job: InstanceJob, record: dict[str, Any], marks: dict[str, float], models: _ModelMaker) -> str:
        """Start the instance's session and run it to its end (its result into ``record``): its patch."""
        if self.stop.is_set():
            raise _Interrupted()
        if job.missing:
            raise EnvironmentError_(job.missing)
        if not self.engine.watch.wait(self.stop):  # queued instances wait for an engine that went away
            raise _Interrupted() if self.stop.is_set() else _EngineGone()

        def observe(event: ev.Event) -> None:
            # Everything the agent logs until its end event is agent time (its last replies
            # included, when they were format errors); after it come the patch and teardown.
            if isinstance(event, ev.End):
                marks["end"] = time.monotonic()
            elif "agent" in marks:
                marks["last_step"] = time.monotonic()

        instance = job.instance
        record["session"] = session_id = self._session_id(instance)
        request = RunRequest(
            task=task_text(instance),
            model=self.model,
            env="docker",
            image=job.image,
            repo=None,
            repo_dir=instance.repo_dir,
            scaffold_ref=self.scaffold,
            limits=job.limits,
            session_id=session_id,
            parent=f"bench:{self.batch_id}",
            extra={"bench": {"batch": self.batch_id, "suite": self.suite_spec, "instance_id": instance.instance_id}},
            labels={BATCH_LABEL: self.batch_id},
            contract_files=self.contracts,
            graded_test_files=graded_test_files(instance.test_patch),
        )
        hooks = RunHooks(
            model_factory=models,
            observers=[observe],
            on_agent=lambda agent: marks.setdefault("agent", time.monotonic()),
        )
        result = start_run(request, hooks, self.store)
        record.update(status=result.status, steps=result.steps, cost=result.cost, reason=result.message,
                      finished=result.status in FINISHED_STATUSES)
        return result.patch


    def _classify(self, record: dict[str, Any], job: InstanceJob, failure: BaseException | None, *,
                  model_failed: bool, missing_image: bool) -> None:
        """The record's ``error_kind``. When the engine went away under the instance, the raw error
        becomes one line; the instance is run again (``engine: back``) once the engine answers, or
        the batch learns that the engine is gone (``engine: gone``)."""
        watch = self.engine.watch
        if missing_image or model_failed or watch.answers():
            record["error_kind"] = error_kind(failure, model_failed=model_failed, missing_image=missing_image)
            return
        record.update(error_kind="engine", detail=record["reason"])
        lost = f"the Docker engine at {engine_address()} went away during this instance"
        if job.engine_retries >= ENGINE_RETRIES:
            record["reason"] = f"{lost}, again: it is left for the next run"
        elif watch.wait(self.stop):
            record.update(engine="back", reason=f"{lost}; it is back, so the instance runs again")
        elif not self.stop.is_set():
            record.update(engine="gone", reason=f"{lost} and {watch.gone_message(lost=False)}")


class _Interrupted(Exception):
    pass


class _EngineGone(Exception):
    """The engine stayed away longer than the batch waits for it: the instance is not started."""


def _timings(marks: dict[str, float], model_seconds: float) -> dict[str, float]:
    """Seconds per phase: setup (session, scaffold, container start, repository check), the agent's
    steps (its model time also on its own, as ``model``), patch extraction, and teardown (container
    removal). Phases not reached are left out."""
    spans = {}
    order = [("setup", "start", "agent"), ("agent", "agent", "last_step"), ("patch", "last_step", "end"),
             ("teardown", "end", "return")]
    for name, first, second in order:
        if first in marks and second in marks:
            spans[name] = round(marks[second] - marks[first], 3)
    if "agent" in marks:
        spans["model"] = round(model_seconds, 3)
    return spans


def _check_scaffold(ref: str) -> None:
    """Fail the whole batch now on a bad --scaffold rather than every instance later."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="live-swe-bench-scaffold-") as tmp:
        materialize(ref, Path(tmp) / "scaffold")


def _spent(out: Path) -> float:
    """What the runs in ``out`` have spent so far: every attempt's cost in results.jsonl."""
    return sum(float(record.get("cost") or 0.0) for record in read_jsonl(out / RESULTS_FILE))


def _jobs(suite: Suite, todo: list[Instance], engine: _Engine, limits: KernelLimits, *, template: str | None,
          image_override: Callable[[Instance], str] | None, skip_missing: bool) -> list[InstanceJob]:
    """Each instance's image, looked up before anything runs; a missing one that cannot be pulled
    stops the batch (with what to run to get it), or with ``skip_missing`` fails that instance."""

    if image_override is not None:
        chosen = {i.instance_id: image_override(i) for i in todo}
        overridden = [replace(i, image=chosen[i.instance_id]) for i in todo]
        statuses = image_statuses(suite, engine.client, overridden, template=None)
    else:
        statuses = image_statuses(suite, engine.client, todo, template=template)
    images = instance_images(statuses)
    reachable: dict[str, bool] = {}

    def pullable(image: str) -> bool:  # registry suites pull at container start when they can
        if suite.kind == "local" or image_override is not None or template:
            return False
        if image not in reachable:
            reachable[image] = registry_reachable(image)
        return reachable[image]

    missing = [status for status in statuses if not status.present and not pullable(status.image)]
    if missing and not skip_missing:
        error = missing_images_error(suite, missing)
        raise UserError(f"{error}\nNothing was run. Get the images, or pass --skip-missing to run the others.")
    why = {instance_id: f"Docker image {status.image!r} for {instance_id} is not on this machine; "
                        f"{how_to_get(suite, status.image, status)}"
           for status in missing for instance_id in status.instance_ids}
    return [InstanceJob(i, images[i.instance_id], limits, why.get(i.instance_id, "")) for i in todo]


def run_batch(
    suite_spec: str,
    *,
    model: str,
    out: Path,
    workers: int = 1,
    instances: list[str] | None = None,
    filter: str | None = None,  # noqa: A002 - the CLI option's name
    slice: str | None = None,  # noqa: A002
    scaffold: str = "seed",
    redo: bool = False,
    limits: KernelLimits | None = None,
    total_cost_limit: float | None = None,
    image_template: str | None = None,
    image_override: Callable[[Instance], str] | None = None,
    skip_missing: bool = False,
    model_factory: ModelFactory | None = None,
    show_progress: bool = True,
    contracts: tuple[Path, ...] = (),
    engine_wait: float = ENGINE_WAIT_S,
    executor: str = "thread",
    ray_address: str | None = None,
) -> BatchSummary:
    """Run the agent on the selected instances of a suite, ``workers`` at a time (see the module doc);
    ``executor="ray"`` runs each instance as a task on a Ray cluster (``ray_batch``)."""
    started = time.monotonic()
    batch_type = _executor_batch(executor, ray_address)
    if workers < 1:
        raise UserError(f"--workers must be at least 1 (got {workers})")
    if total_cost_limit is not None and total_cost_limit <= 0:
        raise UserError(f"--total-cost-limit must be more than 0 (got {total_cost_limit})")
    if engine_wait < 0:
        raise UserError(f"--engine-wait must be 0 or more seconds (got {engine_wait})")
    if image_template:
        check_template(image_template)
    limits = limits or KernelLimits()
    for path in contracts:  # a bad contract stops the batch before anything runs
        read_contract(Path(path))
    out = Path(out).expanduser().resolve()
    suite = load_suite(suite_spec)
    selected = suite.select_some(instances=instances, filter=filter, slice=slice)
    # a bad model name or scaffold fails the batch once, before anything is written
    _check_scaffold(scaffold)
    if model_factory is None:
        make_model(model)

    def todo_now() -> list[Instance]:
        done_before = {} if redo else read_preds(out / PREDS_FILE)
        return [i for i in selected if i.instance_id not in done_before]

    engine = _Engine() if todo_now() else None
    jobs = _jobs(suite, todo_now(), engine, limits, template=image_template, image_override=image_override,
                 skip_missing=skip_missing) if engine else []  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    with _DirLock(out):
        info = _batch_info(out, suite_spec, model, scaffold, limits=limits.model_dump(),
                           total_cost_limit=total_cost_limit, image_template=image_template)
        stale = _close_stale_sessions(out)  # a killed run's sessions: their instances run again below
        wanted = {i.instance_id for i in todo_now()}  # another run may have finished some meanwhile
        jobs = [job for job in jobs if job.instance.instance_id in wanted]
        summary = BatchSummary(suite=suite.name, out=out, total=len(selected), skipped=len(selected) - len(jobs),
                               spent_before=_spent(out), stale=stale)
        if not jobs:
            summary.elapsed = round(time.monotonic() - started, 3)
            return summary
        engine.remove_batch_containers(info["batch_id"])  # anything a killed run of this batch left
        engine.watch.wait_s = engine_wait
        batch = batch_type(suite=suite, suite_spec=suite_spec, model=model, out=out, batch_id=info["batch_id"],
                       scaffold=scaffold, model_factory=model_factory, engine=engine, contracts=tuple(contracts))
        try:
            with BatchProgress(len(selected), skipped=summary.skipped, enabled=show_progress) as progress, \
                    _signals_stop(summary):
                _drive(batch, jobs, max(workers, getattr(batch, "capacity", 0)), summary, progress, total_cost_limit)
        finally:
            batch.close()
    order = {i.instance_id: n for n, i in enumerate(selected)}
    summary.records.sort(key=lambda r: order.get(r["instance_id"], 0))
    summary.elapsed = round(time.monotonic() - started, 3)
    return summary


def _executor_batch(executor: str, ray_address: str | None):
    """The per-instance work of an executor: this process's threads, or Ray tasks (connected now,
    so a missing Ray or cluster is one line before anything is written)."""
    check_executor(executor)
    if executor == "thread":
        return _Batch
    connect_ray(ray_address)
    from live_swe.bench.ray_batch import RayBatch

    return functools.partial(RayBatch, ray_address=ray_address)


def _close_stale_sessions(out: Path) -> int:
    """Close the sessions a killed run left ``running`` (we hold the folder's lock), booking each in
    results.jsonl; returns how many there were."""
    records = mark_stale_sessions(out / SESSIONS_DIR)
    if records:
        with JsonlAppender(out / RESULTS_FILE) as results:
            for record in records:
                results.append(record)
    return len(records)


@contextlib.contextmanager
def _signals_stop(summary: BatchSummary):
    """SIGTERM and SIGHUP (``timeout``, a closed terminal, CI cancelling) stop the batch as Ctrl-C does:
    workers stopped, containers removed, every session closed. Only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame) -> None:
        summary.signal = summary.signal or signum
        raise KeyboardInterrupt

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _budgeted(job: InstanceJob, left: float) -> InstanceJob:
    """The job with its cost budget no larger than what is left of the total (0 means no limit)."""
    limit = job.limits.cost_limit
    if limit and limit <= left:
        return job
    return replace(job, limits=job.limits.model_copy(update={"cost_limit": left}))


def _drive(batch: _Batch, jobs: list[InstanceJob], workers: int, summary: BatchSummary, progress: BatchProgress,
           total_cost_limit: float | None = None) -> None:
    """Feed the pool, at most ``workers`` jobs at a time, and write each outcome; stop starting jobs
    once the total cost limit is spent or the engine is gone; run again a job the engine went away
    under; on Ctrl-C stop the workers and remove this batch's containers."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="live-swe-bench")
    queue = deque(jobs)
    pending: set[Future] = set()
    job_of: dict[Future, InstanceJob] = {}

    def fill() -> None:
        while queue and len(pending) < workers:
            job = queue[0]
            if total_cost_limit is not None and not job.missing:
                # rounded: float sums leave 2e-16 of dust ($2 - $1.20 = $0.7999…), which would make a
                # reply costing exactly what is left count as spending past it
                left = round(total_cost_limit - summary.spent_before - summary.cost, 9)
                if left <= 0:
                    summary.not_started = len(queue)
                    summary.stopped = (f"the total cost limit of ${total_cost_limit:.2f} is spent "
                                       f"(${summary.spent_before + summary.cost:.4f})")
                    progress.note(f"{summary.stopped}: {len(queue)} instance(s) not started")
                    queue.clear()
                    return
                job = _budgeted(job, left)
            queue.popleft()
            future = pool.submit(batch.run_one, job)
            job_of[future] = job
            pending.add(future)

    def collect(finished: set[Future]) -> None:
        for future in finished:
            job = job_of.pop(future)
            if future.cancelled():
                continue
            record, patch = future.result()
            batch.record(record, patch)
            if record.get("engine") == "back":  # its attempt is booked; the instance goes first again
                summary.retried += 1
                progress.note(f"{record['instance_id']}: {record['reason']}")
                queue.appendleft(replace(job, engine_retries=job.engine_retries + 1))
                continue
            summary.add(record)
            progress.finished_one(record)
            if record.get("engine") == "gone" and queue:
                summary.not_started += len(queue)
                summary.stopped = batch.engine.watch.gone_message()
                progress.note(f"stopping: {summary.stopped}; {len(queue)} instance(s) not started")
                queue.clear()

    try:
        fill()
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            collect(finished)
            fill()
    except KeyboardInterrupt:
        summary.interrupted = True
        queue.clear()
        progress.note("interrupted: stopping the workers and removing this batch's containers")
        _stop_workers(batch, pending, collect)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _stop_workers(batch: _Batch, pending: set[Future], collect: Callable[[set[Future]], None]) -> None:
    """Ctrl-C: the running instances stop at their next model call, their containers are removed
    (again, until every worker has ended: a worker may start one late), and what they finished is kept."""
    batch.stop.set()
    for future in pending:
        future.cancel()
    while pending:
        try:
            batch.engine.remove_batch_containers(batch.batch_id)
            wait(pending, timeout=2)
        except KeyboardInterrupt:
            continue  # already stopping; keep cleaning up
        ended = {f for f in pending if f.done()}
        collect(ended)
        pending -= ended
    batch.engine.remove_batch_containers(batch.batch_id)
