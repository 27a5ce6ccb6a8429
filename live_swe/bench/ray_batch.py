"""``bench run --executor ray``: each instance's run is one Ray task on a node with a Docker engine.

The batch (``batch.run_batch``) keeps its driver: it picks the jobs, feeds them ``workers`` at a
time (at least the cluster's ``docker`` units), and alone writes ``preds.jsonl`` and
``results.jsonl``. ``RayBatch.run_one`` sends the job to the cluster and waits for its outcome:

- On the node, ``_run_on_node`` runs the same per-instance code as the thread pool
  (``_Batch.run_one``) in a folder of its own, after checking the image is on that node, and sends
  back the record, the patch and the session folder (events, patch, scaffold history), which the
  driver unpacks under ``sessions/<id>`` (the id is reserved on the driver, so attempts on
  different nodes never collide).
- A task lost with its node or worker process is run again by Ray on another node (bounded,
  ``ray_cluster.TASK_RETRIES``); only the attempt that returns is recorded, so nothing is
  recorded twice. A killed driver takes its tasks with it; rerunning resumes from ``preds.jsonl``.
- On Ctrl-C each waiting thread cancels its task (a KeyboardInterrupt in the task: the session
  ends ``interrupted`` and its container is removed), then forces it, and the batch's containers
  are swept on every Docker node.
"""

from __future__ import annotations

import tempfile
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from live_swe.bench.batch import BATCH_LABEL, InstanceJob, _Batch, _Engine, _now
from live_swe.bench.ray_cluster import (
    connect,
    docker_capacity,
    node_identity,
    pack,
    remove_containers_everywhere,
    task_options,
    unpack,
)
from live_swe.bench.suites import Instance, Suite
from live_swe.environments.base import EnvironmentError_
from live_swe.errors import UserError
from live_swe.session.store import RunStatus

POLL_S = 0.5  # how often a waiting thread looks at the batch's stop flag
CANCEL_GRACE_S = 15.0  # how long a cancelled task gets to end its session before it is killed


class _ClusterEngine:
    """The driver's engine, whose container sweep also reaches every Docker node of the cluster."""

    def __init__(self, engine: _Engine, ray):
        self._engine = engine
        self._ray = ray

    def remove_batch_containers(self, batch_id: str) -> list[str]:
        removed = self._engine.remove_batch_containers(batch_id)
        remove_containers_everywhere(self._ray, BATCH_LABEL, batch_id, timeout=10.0)
        return removed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


class RayBatch(_Batch):
    """The batch's per-instance work, done by Ray tasks; everything written stays on the driver."""

    def __init__(self, *, ray_address: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.ray = connect(ray_address)
        self.capacity = docker_capacity(self.ray)
        self.engine = _ClusterEngine(self.engine, self.ray)
        self.per_node: Counter[str] = Counter()
        self._task = self.ray.remote(_run_on_node).options(**task_options())
        self._settings = {"suite": Suite(self.suite.name, self.suite.kind, [], self.suite.source),
                          "suite_spec": self.suite_spec, "model": self.model, "batch_id": self.batch_id,
                          "scaffold": self.scaffold, "engine_wait": self.engine.watch.wait_s}
        self._scaffold_tree = _scaffold_tree(self.scaffold)
        self._contracts = [(Path(path).name, Path(path).read_text()) for path in self.contracts]
        self._reserving = threading.Lock()
        _drop_placeholders(self.store.root)  # left by a killed driver: attempts it never got back

    def _reserve(self, instance: Instance) -> str:
        """A session id no other attempt has, held by an empty folder until the session comes back."""
        with self._reserving:
            session_id = self._session_id(instance)
            (self.store.root / session_id).mkdir()
            return session_id

    def record(self, record: dict[str, Any], patch: str) -> None:
        super().record(record, patch)
        if record.get("node"):
            self.per_node[record["node"]] += 1

    def run_one(self, job: InstanceJob) -> tuple[dict[str, Any], str]:
        """Run the job as a task and wait for it; its record and patch. Never raises."""
        if self.stop.is_set():
            return _record(job, self.model, status="interrupted", reason="the batch was interrupted"), ""
        self._settings["engine_wait"] = self.engine.watch.wait_s
        session_id = self._reserve(job.instance)
        ref = self._task.remote(*self._task_arguments(job, session_id))
        outcome, failure = self._wait(ref)
        place = self.store.root / session_id
        if outcome is None:
            _remove_if_empty(place)
            if failure is None or self.stop.is_set():  # a task cut short by the stop fails as it goes
                return _record(job, self.model, status="interrupted", reason="the batch was interrupted"), ""
            return _record(job, self.model, reason=f"the Ray task failed: {failure}", error_kind="environment"), ""
        unpack(outcome["session"], place)
        _remove_if_empty(place)
        record = outcome["record"]
        if self.stop.is_set() and not record.get("finished"):  # as the thread pool: the stop cut it short
            # (the cancel may reach the agent as an error, its container going away under it)
            record = {**record, "status": RunStatus.INTERRUPTED, "reason": record.get("reason") or "the batch was interrupted"}
            record.pop("error_kind", None)
        return record, outcome["patch"]

    def _task_arguments(self, job: InstanceJob, session_id: str) -> tuple:
        """What the task is sent (no keys: those travel in its runtime environment)."""
        return job, session_id, self._settings, self._scaffold_tree, self._contracts, self.model_factory

    def _wait(self, ref) -> tuple[dict[str, Any] | None, str | None]:
        """The task's outcome, or why there is none (None: the batch was stopped)."""
        ray = self.ray
        while True:
            ready, _ = ray.wait([ref], timeout=POLL_S)
            if ready or self.stop.is_set():
                break
        if not ready:
            ray.cancel(ref)
            ready, _ = ray.wait([ref], timeout=CANCEL_GRACE_S)
            if not ready:
                ray.cancel(ref, force=True)
                return None, None
        try:
            return ray.get(ref), None
        except ray.exceptions.TaskCancelledError:
            return None, None
        except ray.exceptions.RayError as exc:
            return None, (str(exc).strip().splitlines() or [exc.__class__.__name__])[-1][:500]


def _record(job: InstanceJob, model: str, *, status: str = "error", reason: str, **extra: Any) -> dict[str, Any]:
    """A record for an attempt that ran no agent (its fields as ``_Batch.run_one`` writes them)."""
    return {"instance_id": job.instance.instance_id, "status": status, "finished": False, "reason": reason,
            "session": None, "steps": 0, "cost": 0.0, "image": job.image, "model": model, "elapsed": 0.0,
            "timings": {}, "finished_at": _now(), **extra}


def _scaffold_tree(ref: str) -> bytes:
    """A scaffold other than the seed, made on the driver (its sessions and archive live here) and
    sent to the nodes as a folder."""
    if ref == "seed":
        return b""
    from live_swe.scaffolding.refs import materialize

    with tempfile.TemporaryDirectory(prefix="live-swe-ray-scaffold-") as tmp:
        materialize(ref, Path(tmp) / "scaffold")
        return pack(Path(tmp) / "scaffold")


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass  # not empty: a session came back


def _drop_placeholders(root: Path) -> None:
    if root.is_dir():
        for path in root.iterdir():
            if path.is_dir():
                _remove_if_empty(path)


class _NodeBatch(_Batch):
    """The per-instance work on a node, in a folder of its own, under the session id the driver chose."""

    def __init__(self, *, session_id: str, **kwargs: Any):
        super().__init__(**kwargs)
        self._given_id = session_id

    def _session_id(self, instance: Instance) -> str:
        self.store.root.mkdir(parents=True, exist_ok=True)
        return self._given_id


def _run_on_node(job: InstanceJob, session_id: str, settings: dict[str, Any], scaffold_tree: bytes,
                 contracts: list[tuple[str, str]], model_factory) -> dict[str, Any]:
    """The Ray task: one instance run on this node; its record (with the node), patch and session."""
    where = node_identity()
    with tempfile.TemporaryDirectory(prefix="live-swe-ray-") as tmp:
        root = Path(tmp)
        scaffold = settings["scaffold"]
        if scaffold_tree:
            unpack(scaffold_tree, root / "scaffold")
            scaffold = f"path:{root / 'scaffold'}"
        contract_paths = []
        for n, (name, text) in enumerate(contracts):
            path = root / "contracts" / f"{n}-{name}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            contract_paths.append(path)
        try:
            engine = _Engine()
        except (UserError, EnvironmentError_) as exc:
            record = _record(job, settings["model"], reason=f"on {where['host']}: {exc}", error_kind="engine")
            return {"record": {**record, **where}, "patch": "", "session": b""}
        engine.watch.wait_s = settings["engine_wait"]
        suite: Suite = settings["suite"]
        if not job.missing and suite.kind == "local" and not engine.has_image(job.image):
            job = replace(job, missing=(f"Docker image {job.image!r} for {job.instance.instance_id} is not on the "
                                        f"Ray node {where['host']} ({where['node'][:12]}); build it there: "
                                        f"live-swe bench images {settings['suite_spec']} --build"))
        batch = _NodeBatch(session_id=session_id, suite=suite, suite_spec=settings["suite_spec"],
                           model=settings["model"], out=root, batch_id=settings["batch_id"], scaffold=scaffold,
                           model_factory=model_factory, engine=engine, contracts=tuple(contract_paths))
        try:
            record, patch = batch.run_one(job)
        finally:
            batch.close()
        record.update(where)
        return {"record": record, "patch": patch, "session": pack(root / "sessions" / session_id)}
