"""Headless batch runs: one container per instance, the agent inside, one prediction line per instance.

Layout of an output directory ``DIR``::

    batch.json      the batch's id (its containers carry the label live-swe.batch=<id>) and settings
    preds.jsonl     SWE-bench predictions, one line per finished instance (appended, fsync'd)
    results.jsonl   one record per instance attempt: status, reason, steps, cost, timings
    sessions/<id>/  each instance's session (events, patch, scaffold history)

A finished instance is one whose agent reached an end (submitted, or stopped by a budget or by
format errors); it goes to ``preds.jsonl`` and is skipped next time unless ``redo``. A failed one
(missing image, engine or model failure, any exception) is only recorded in ``results.jsonl``, so
the next run tries it again. ``kill -9`` loses only the instances in flight; Ctrl-C stops the
workers and removes this batch's containers, and ``run_batch`` returns with ``interrupted`` set.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from live_swe.bench.preds import PREDS_FILE, RESULTS_FILE, JsonlAppender, read_preds
from live_swe.bench.progress import BatchProgress
from live_swe.bench.suites import Instance, Suite, SuiteError, load_suite, task_text
from live_swe.config import KernelLimits
from live_swe.environments.base import EnvironmentError_
from live_swe.errors import UserError
from live_swe.models.base import Model, ModelError

BATCH_FILE = "batch.json"
LOCK_FILE = ".batch.lock"
SESSIONS_DIR = "sessions"
BATCH_LABEL = "live-swe.batch"
FINISHED_STATUSES = ("submitted", "limits_exceeded", "format_error")
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
    records: list[dict[str, Any]] = field(default_factory=list)  # this run's per-instance records

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        self.cost += float(record.get("cost") or 0.0)
        if record.get("finished"):
            self.done += 1
            self.submitted += record.get("status") == "submitted"
        elif record.get("status") != "interrupted":
            self.failed += 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["out"] = str(self.out)
        return data


class _StoppableModel:
    """The instance's model, refusing to answer once the batch is stopping (ends the agent fast)."""

    def __init__(self, model: Model, stop: threading.Event):
        self._model = model
        self._stop = stop
        self.name = getattr(model, "name", "model")

    def query(self, messages, *, tools=None, on_token=None):
        if self._stop.is_set():
            raise ModelError("the batch was interrupted")
        return self._model.query(messages, tools=tools, on_token=on_token)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


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


def _batch_info(out: Path, suite_spec: str, model: str, scaffold: str) -> dict[str, Any]:
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
    info.update(suite=portable_spec(suite_spec), model=model, scaffold=scaffold, updated_at=_now())
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(info, indent=2))
    tmp.replace(path)
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
        try:
            import docker
        except ImportError:
            raise UserError("bench runs need the `docker` Python package: pip install 'live-swe[docker]'") from None
        self._errors = docker.errors
        try:
            self.client = docker.from_env()
            self.client.ping()
        except Exception as exc:  # noqa: BLE001 - every failure here means "no usable engine"
            raise EnvironmentError_(
                f"no Docker engine answers ({exc.__class__.__name__}); bench runs start one container per "
                "instance: start the engine (`sudo systemctl start docker` or `sudo dockerd &`) and retry"
            ) from None
        self._lock = threading.Lock()

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
        from live_swe.environments.docker import remove_leftover_containers

        try:
            return remove_leftover_containers({BATCH_LABEL: batch_id})
        except Exception:  # noqa: BLE001 - best effort; the containers also die with this process
            return []


class _Batch:
    """The per-instance work, shared by the worker threads."""

    def __init__(self, *, suite: Suite, suite_spec: str, model: str, out: Path, batch_id: str, scaffold: str,
                 limits: KernelLimits, image_override, model_factory: ModelFactory | None, engine: _Engine):
        from live_swe.session.store import SessionStore

        self.suite = suite
        self.suite_spec = suite_spec
        self.model = model
        self.out = out
        self.batch_id = batch_id
        self.scaffold = scaffold
        self.limits = limits
        self.image_override = image_override
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

    def _missing_image(self, instance: Instance, image: str) -> str:
        if self.suite.kind == "local":
            how = (f"build it with `live-swe bench images {self.suite_spec} --build --base IMAGE` "
                   "(a registry-free base image comes from `evals/base/build.sh live-swe-base`)")
        else:
            how = f"get it with `docker pull {image}`"
        return f"Docker image {image!r} for {instance.instance_id} is not on this machine; {how}"

    def _image_present(self, image: str) -> bool:
        try:
            return self.engine.has_image(image)
        except EnvironmentError_:
            return True  # unknown: keep the original reason

    def _model_for(self, instance: Instance) -> Callable[[str], Model]:
        def make(name: str) -> Model:
            if self.model_factory is not None:
                model = self.model_factory(name, instance)
            else:
                from live_swe.models.resolve import make_model

                model = make_model(name)
            return _StoppableModel(model, self.stop)

        return make

    # -- one instance

    def run_one(self, instance: Instance) -> dict[str, Any]:
        """Run the agent on one instance and record the outcome. Never raises."""
        from live_swe.runner import RunHooks, RunRequest, start_run

        image = self.image_override(instance) if self.image_override else instance.image
        record: dict[str, Any] = {
            "instance_id": instance.instance_id, "status": "error", "finished": False, "reason": "",
            "session": None, "steps": 0, "cost": 0.0, "image": image, "model": self.model,
        }
        marks: dict[str, float] = {"start": time.monotonic()}

        def observe(event: dict[str, Any]) -> None:
            kind = event.get("t")
            if kind == "step":
                marks["last_step"] = time.monotonic()
            elif kind == "end":
                marks["end"] = time.monotonic()

        try:
            if self.stop.is_set():
                raise _Interrupted()
            if self.suite.kind == "local" and not self.engine.has_image(image):
                raise EnvironmentError_(self._missing_image(instance, image))
            record["session"] = session_id = self._session_id(instance)
            request = RunRequest(
                task=task_text(instance),
                model=self.model,
                env="docker",
                image=image,
                repo=None,
                repo_dir=instance.repo_dir,
                scaffold_ref=self.scaffold,
                limits=self.limits,
                session_id=session_id,
                parent=f"bench:{self.batch_id}",
                extra={"bench": {"batch": self.batch_id, "suite": self.suite_spec, "instance_id": instance.instance_id}},
                labels={BATCH_LABEL: self.batch_id},
            )
            hooks = RunHooks(
                model_factory=self._model_for(instance),
                observers=[observe],
                on_agent=lambda agent: marks.setdefault("agent", time.monotonic()),
            )
            result = start_run(request, hooks, self.store)
            record.update(status=result.status, steps=result.steps, cost=result.cost, reason=result.message,
                          finished=result.status in FINISHED_STATUSES)
            patch = result.patch
        except _Interrupted:
            patch = ""
        except EnvironmentError_ as exc:
            patch = ""
            record["reason"] = _reason(exc)
            if "not on this machine" not in record["reason"] and not self._image_present(image):
                record["reason"] = self._missing_image(instance, image) + f" ({record['reason']})"
        except Exception as exc:  # noqa: BLE001 - one instance never stops the batch
            patch = ""
            record["reason"] = f"{exc.__class__.__name__}: {_reason(exc)}"
        marks["return"] = time.monotonic()
        if self.stop.is_set() and not record["finished"]:
            record.update(status="interrupted", reason=record["reason"] or "the batch was interrupted")
        record["elapsed"] = round(marks["return"] - marks["start"], 3)
        record["timings"] = _timings(marks)
        record["finished_at"] = _now()
        if record["finished"]:
            self.preds.append({
                "instance_id": instance.instance_id,
                "model_name_or_path": self.model,
                "model_patch": patch,
                "status": record["status"],
                "steps": record["steps"],
                "cost": record["cost"],
                "session": record["session"],
            })
        self.results.append(record)
        return record


class _Interrupted(Exception):
    pass


def _timings(marks: dict[str, float]) -> dict[str, float]:
    """Seconds per phase: setup (session, scaffold, container start, repository check), the agent's
    steps, patch extraction, and teardown (container removal). Phases not reached are left out."""
    spans = {}
    order = [("setup", "start", "agent"), ("agent", "agent", "last_step"), ("patch", "last_step", "end"),
             ("teardown", "end", "return")]
    for name, first, second in order:
        if first in marks and second in marks:
            spans[name] = round(marks[second] - marks[first], 3)
    return spans


def _check_scaffold(ref: str) -> None:
    """Fail the whole batch now on a bad --scaffold rather than every instance later."""
    import tempfile

    from live_swe.scaffolding.refs import materialize

    with tempfile.TemporaryDirectory(prefix="live-swe-bench-scaffold-") as tmp:
        materialize(ref, Path(tmp) / "scaffold")


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
    image_override: Callable[[Instance], str] | None = None,
    model_factory: ModelFactory | None = None,
    show_progress: bool = True,
) -> BatchSummary:
    """Run the agent on the selected instances of a suite, ``workers`` at a time (see the module doc)."""
    started = time.monotonic()
    if workers < 1:
        raise UserError(f"--workers must be at least 1 (got {workers})")
    out = Path(out).expanduser().resolve()
    suite = load_suite(suite_spec)
    selected = suite.select(instances=instances, filter=filter, slice=slice)
    if not selected:
        raise SuiteError(f"{suite.name}: the selection matches no instance (of {len(suite)}); "
                         "check --instances / --filter / --slice")
    # a bad model name or scaffold fails the batch once, before anything is written
    _check_scaffold(scaffold)
    if model_factory is None:
        from live_swe.models.resolve import make_model

        make_model(model)
    out.mkdir(parents=True, exist_ok=True)
    with _DirLock(out):
        info = _batch_info(out, suite_spec, model, scaffold)
        done_before = {} if redo else read_preds(out / PREDS_FILE)
        todo = [i for i in selected if i.instance_id not in done_before]
        summary = BatchSummary(suite=suite.name, out=out, total=len(selected), skipped=len(selected) - len(todo))
        if not todo:
            summary.elapsed = round(time.monotonic() - started, 3)
            return summary
        engine = _Engine()
        engine.remove_batch_containers(info["batch_id"])  # anything a killed run of this batch left
        batch = _Batch(suite=suite, suite_spec=suite_spec, model=model, out=out, batch_id=info["batch_id"],
                       scaffold=scaffold, limits=limits or KernelLimits(), image_override=image_override,
                       model_factory=model_factory, engine=engine)
        try:
            with BatchProgress(len(selected), skipped=summary.skipped, enabled=show_progress) as progress:
                _drive(batch, todo, workers, summary, progress)
        finally:
            batch.close()
    order = {i.instance_id: n for n, i in enumerate(selected)}
    summary.records.sort(key=lambda r: order.get(r["instance_id"], 0))
    summary.elapsed = round(time.monotonic() - started, 3)
    return summary


def _drive(batch: _Batch, todo: list[Instance], workers: int, summary: BatchSummary, progress: BatchProgress) -> None:
    """Feed the pool; on Ctrl-C stop the workers and remove this batch's containers."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="live-swe-bench")
    pending: set[Future] = {pool.submit(batch.run_one, instance) for instance in todo}

    def collect(finished: set[Future]) -> None:
        for future in finished:
            if future.cancelled():
                continue
            record = future.result()
            summary.add(record)
            progress.finished_one(record)

    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            collect(finished)
    except KeyboardInterrupt:
        summary.interrupted = True
        batch.stop.set()
        for future in pending:
            future.cancel()
        progress.note("interrupted: stopping the workers and removing this batch's containers")
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
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
