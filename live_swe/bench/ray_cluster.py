"""The Ray cluster as the bench executors need it: connecting, the task environment, node cleanup.

Work that needs Docker asks for the custom resource ``docker`` (one unit per task), so only nodes
started with ``--resources='{"docker": N}'`` take it (N: the instances one node runs at once).
Provider keys reach a task only through its runtime environment (``env_vars``), never as an
argument: task arguments are shown by Ray's state API and dashboard.

``ray`` is imported only here and in the executors, so ``live-swe --help`` never pays for it.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

from live_swe.errors import UserError
from live_swe.infra.redact import MIN_SECRET_LENGTH, is_secret_name

DOCKER_RESOURCE = "docker"
TASK_RETRIES = 2  # times a task lost with its node (or its worker process) is run again elsewhere
INSTALL_HINT = "--executor ray needs Ray: pip install 'live-swe[ray]'"
EXECUTORS = ("thread", "ray")
# Variables a task needs from the driver besides the keys (litellm offline, this process's settings).
_PASSED_VARIABLES = ("LITELLM_LOCAL_MODEL_COST_MAP",)


def check_executor(executor: str) -> None:
    if executor not in EXECUTORS:
        raise UserError(f"--executor {executor!r}: use one of {', '.join(EXECUTORS)}")


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    return ray


def connect(address: str | None = None):
    """Ray, connected to the cluster at ``address`` (else ``RAY_ADDRESS``, else the one this machine
    belongs to); one clear line when there is none or no node offers the ``docker`` resource."""
    ray = import_ray()
    if not ray.is_initialized():
        target = address or os.environ.get("RAY_ADDRESS") or "auto"
        kwargs: dict[str, Any] = {}
        host = target.rsplit(":", 1)[0]
        if host.startswith("127."):  # a cluster on loopback: the driver is on the head's address
            kwargs["_node_ip_address"] = host
        _check_reachable(target)
        _cluster_messages_to_stderr()
        try:
            ray.init(address=target, namespace="live-swe", log_to_driver=False, logging_level="ERROR",
                     configure_logging=False, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(f"no Ray cluster answers at {target!r} ({str(exc).strip().splitlines()[0][:200]}); "
                            "start one (`ray start --head --resources='{\"docker\": 1}'` on a machine with "
                            "Docker) or pass --ray-address HOST:PORT") from None
    if not docker_capacity(ray):
        raise UserError(f"no node of the Ray cluster offers the `{DOCKER_RESOURCE}` resource, so no instance "
                        "could run: start the nodes that have a Docker engine with "
                        "`ray start ... --resources='{\"docker\": N}'` (N: instances run at once on that node)")
    return ray


def _check_reachable(target: str, timeout: float = 5.0) -> None:
    """A HOST:PORT that does not answer is one line now (``ray.init`` would retry it for minutes)."""
    import socket

    host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or "://" in target:
        return  # "auto", or a ray:// client address: ray.init says what is wrong itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UserError(f"no Ray cluster answers at {target!r} ({exc.strerror or exc}); start one "
                        "(`ray start --head --resources='{\"docker\": 1}'` on a machine with Docker) or pass "
                        "--ray-address HOST:PORT") from None


def _cluster_messages_to_stderr() -> None:
    """Ray prints the cluster's error messages (a node lost, ...) on the driver's stdout, which is
    reserved for the result (``--json``): they go to stderr."""
    from ray._private import worker

    printing = worker.print_to_stdstream
    if getattr(printing, "live_swe_stderr", False):
        return

    def to_stderr(data, ignore_prefix: bool) -> None:
        printing({**data, "is_err": True}, ignore_prefix)

    to_stderr.live_swe_stderr = True
    worker.print_to_stdstream = to_stderr


def docker_capacity(ray) -> int:
    """How many Docker tasks the cluster runs at once (its ``docker`` units)."""
    return int(ray.cluster_resources().get(DOCKER_RESOURCE, 0))


def docker_nodes(ray) -> list[str]:
    """The ids of the live nodes that offer the ``docker`` resource."""
    return [node["NodeID"] for node in ray.nodes()
            if node.get("Alive") and node.get("Resources", {}).get(DOCKER_RESOURCE, 0) > 0]


def task_env() -> dict[str, str]:
    """The runtime environment's variables: the provider keys (and other secrets) this process holds,
    which redaction on the worker then masks too, and the few settings a task needs."""
    passed = {name: value for name, value in os.environ.items()
              if is_secret_name(name) and len(value) >= MIN_SECRET_LENGTH}
    passed.update({name: os.environ[name] for name in _PASSED_VARIABLES if name in os.environ})
    return passed


def task_options(**extra: Any) -> dict[str, Any]:
    """Options of a Docker task: one ``docker`` unit, bounded retries when its node is lost, its keys."""
    return {"resources": {DOCKER_RESOURCE: 1}, "num_cpus": 0, "max_retries": TASK_RETRIES,
            "retry_exceptions": False, "runtime_env": {"env_vars": task_env()}, **extra}


def node_identity() -> dict[str, str]:
    """Where a task runs: the Ray node id and the machine's name."""
    import socket

    import ray

    return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname()}


def pack(directory: Path) -> bytes:
    """A folder as gzip'd tar bytes (its paths relative to it); empty when there is none."""
    if not directory.is_dir():
        return b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, directory: Path) -> None:
    """Tar bytes from ``pack`` into ``directory`` (links and paths leaving it are refused)."""
    if not data:
        return
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(directory, filter="data")


def remove_containers_everywhere(ray, label: str, value: str, timeout: float = 30.0) -> None:
    """Remove the containers labelled ``label=value`` on every Docker node (best effort): the ones
    a cancelled or killed task left behind."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    sweep = ray.remote(_remove_containers)
    refs = [sweep.options(num_cpus=0, max_retries=0,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(label, value)
            for node in docker_nodes(ray)]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=timeout)


def _remove_containers(label: str, value: str) -> list[str]:
    from live_swe.environments._docker_engine import remove_leftover_containers

    try:
        return remove_leftover_containers({label: value})
    except Exception:  # noqa: BLE001 - best effort; a node without an engine has nothing to remove
        return []
