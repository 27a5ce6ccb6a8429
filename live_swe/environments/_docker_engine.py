"""Talking to the Docker engine: connecting, finding images, and never leaving containers behind.

Every failure a person can fix (no ``docker`` package, engine not running, no permission, image
missing) becomes one ``EnvironmentError_`` that says what to do.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from live_swe.environments.base import EnvironmentError_

LABEL = "live-swe"  # every container we create carries live-swe=1
_REGISTRY_PROBE_TIMEOUT_S = 3.0


def import_docker():
    try:
        import docker  # noqa: PLC0415 - heavy and optional: only the docker environment needs it
    except ImportError:
        raise EnvironmentError_(
            "the docker environment needs the `docker` Python package: pip install 'live-swe[docker]'"
        ) from None
    return docker


def _engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _is_permission_problem(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if isinstance(seen, PermissionError) or "permission denied" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def engine_error(exc: BaseException) -> EnvironmentError_:
    address = _engine_address()
    if _is_permission_problem(exc):
        return EnvironmentError_(
            f"permission denied talking to the Docker engine at {address}. Add yourself to the docker "
            "group (`sudo usermod -aG docker $USER`, then log in again) or run live-swe with sudo."
        )
    return EnvironmentError_(
        f"no Docker engine answers at {address}. Start it with `sudo systemctl start docker` "
        "(or `sudo dockerd &`), or point DOCKER_HOST at a running engine."
    )


@contextmanager
def answering() -> Iterator[None]:
    """Around a call to the engine: the engine going away mid-run (stopped, restarted) is one clear
    error. docker-py lets ``requests`` errors through: a refused or dropped connection is not a
    ``DockerException``."""
    import requests  # noqa: PLC0415 - with docker-py; only the docker environment needs it

    try:
        yield
    except requests.exceptions.RequestException as exc:
        if _is_permission_problem(exc):
            raise engine_error(exc) from None
        raise EnvironmentError_(
            f"the Docker engine at {_engine_address()} stopped answering ({type(exc).__name__}); the session "
            "is saved with its last changes: start the engine again, then resume the session"
        ) from None


def connect(timeout: float = 300) -> Any:
    """A docker client whose engine answered a ping; else the one "no engine" message, saying how to
    start one. Every part that talks to the engine (environments, bench runs, evaluation) connects here."""
    docker = import_docker()
    try:
        # generous: copying a large repository in is one request
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise engine_error(exc) from None
    except OSError as exc:
        raise engine_error(exc) from None
    return client


def _registry_host(image: str) -> tuple[str, int]:
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, _, port = first.partition(":")
        return host, int(port) if port.isdigit() else 443
    return "registry-1.docker.io", 443


def _registry_reachable(image: str) -> tuple[bool, str]:
    host, port = _registry_host(image)
    try:
        socket.create_connection((host, port), timeout=_REGISTRY_PROBE_TIMEOUT_S).close()
        return True, host
    except OSError:
        return False, host


def registry_reachable(image: str) -> bool:
    """Whether the registry ``image`` would be pulled from answers (a quick TCP probe)."""
    return _registry_reachable(image)[0]


def _missing_image(image: str, why: str) -> EnvironmentError_:
    return EnvironmentError_(
        f"Docker image {image!r} is not on this machine ({why}). Get it with `docker pull {image}`, "
        "or for a local benchmark suite build it with `live-swe bench images SUITE --build`."
    )


def ensure_image(client: Any, image: str, *, pull: bool) -> dict:
    """The image's inspect data; pulls it only when allowed and its registry can be reached."""
    docker = import_docker()
    try:
        return client.api.inspect_image(image)
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.DockerException as exc:
        raise engine_error(exc) from None
    if not pull:
        raise _missing_image(image, "pulling is turned off")
    reachable, host = _registry_reachable(image)
    if not reachable:
        raise _missing_image(image, f"its registry {host} cannot be reached, so it was not pulled")
    try:
        client.images.pull(image if ":" in image.rsplit("/", 1)[-1] or "@" in image else f"{image}:latest")
        return client.api.inspect_image(image)
    except docker.errors.DockerException as exc:
        raise _missing_image(image, f"pulling it failed: {str(exc)[:300]}") from None


# -- cleanup ------------------------------------------------------------------------------------

_live: dict[str, Any] = {}  # container id -> api client, for the exit-time sweep
_lock = threading.Lock()
_sweep_registered = False
_signals_installed = False


def track(api: Any, container_id: str) -> None:
    with _lock:
        _live[container_id] = api
    _install_handlers()


def untrack(container_id: str) -> None:
    with _lock:
        _live.pop(container_id, None)


def remove_container(api: Any, container_id: str) -> None:
    """Force-remove; a container already gone (or being auto-removed) is fine."""
    docker = import_docker()
    try:
        api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc) and "No such container" not in str(exc):
            raise
    finally:
        untrack(container_id)


def _sweep() -> None:
    with _lock:
        items = list(_live.items())
    for container_id, api in items:
        try:
            remove_container(api, container_id)
        except Exception:  # noqa: BLE001 - exiting anyway; the label lets the batch runner find it
            pass


def _exit_on_signal(signum, frame) -> None:
    # Turn a polite kill into a normal exit so finally blocks and the atexit sweep run.
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    global _sweep_registered, _signals_installed
    if not _sweep_registered:
        _sweep_registered = True
        atexit.register(_sweep)
    # Signal handlers can only be set from the main thread: retry until a call comes from there.
    if _signals_installed or threading.current_thread() is not threading.main_thread():
        return
    _signals_installed = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _exit_on_signal)
        except (ValueError, OSError):
            pass


def remove_leftover_containers(label_filter: dict[str, str] | str | None = None) -> list[str]:
    """Remove containers live-swe left behind (e.g. after ``kill -9``); returns their names.

    ``label_filter`` narrows the search: ``{"live-swe.run": "abc"}`` or ``"live-swe.run=abc"``.
    """
    client = connect()
    labels = [f"{LABEL}=1"]
    if isinstance(label_filter, str) and label_filter:
        labels.append(label_filter)
    elif isinstance(label_filter, dict):
        labels += [f"{k}={v}" for k, v in label_filter.items()]
    removed = []
    for info in client.api.containers(all=True, filters={"label": labels}):
        remove_container(client.api, info["Id"])
        removed.append((info.get("Names") or [info["Id"][:12]])[0].lstrip("/"))
    return removed
