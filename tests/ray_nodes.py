"""Ray nodes on loopback for tests and benchmarks: each a ``ray start --block`` in a process group of
its own, on its own address (127.0.0.N) and ports, stopped by its own PIDs (never ``ray stop``,
which stops every Ray process of the user)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

RAY = [sys.executable, "-m", "ray.scripts.scripts"]  # `ray`, from this interpreter wherever its scripts went
NODE_OPTIONS = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats"]


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports above Ray's default worker-port range."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            first = 20000 + sock.getsockname()[1] % 30000
        try:
            for port in range(first, first + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                children.setdefault(int(handle.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class RayNode:
    """One node: ``ray start --block ARGS`` with ports of its own; its LIVE_SWE_HOME beside its log."""

    def __init__(self, name: str, args: list[str], log: Path):
        self.name = name
        self.log = log
        base = free_ports(60)  # the node's agent and worker ports, apart from every other node's
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "LIVE_SWE_HOME": str(log.parent / f"{name}-home")}
        self.process = subprocess.Popen(
            [*RAY, "start", "--block", *args, *NODE_OPTIONS, f"--dashboard-agent-listen-port={base}",
             f"--min-worker-port={base + 10}", f"--max-worker-port={base + 59}"],
            stdin=subprocess.DEVNULL, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True)

    def wait_started(self, timeout: float = 120) -> None:
        """Until the node says it runs; an error naming the node (and its log's end) if it does not."""
        deadline = time.monotonic() + timeout
        while "Ray runtime started" not in self.log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start ({self.name}) did not start: {self.log.read_text()[-1500:]}")
            time.sleep(0.5)

    def raylet(self) -> int:
        (pid,) = [p for p in descendants(self.process.pid) if "/raylet/raylet " in cmdline(p)]
        return pid

    def node_id(self) -> str:
        for part in cmdline(self.raylet()).split():
            if part.startswith(("--node_id=", "--node-id=")):
                return part.split("=", 1)[1]
        raise AssertionError("the raylet's command line names no node id")

    def stop(self) -> None:
        """Every process this node started, then the node's own, by their PIDs."""
        pids = [self.process.pid, *descendants(self.process.pid)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
            while sig == signal.SIGTERM and time.monotonic() < deadline and any(alive(p) for p in pids[1:]):
                time.sleep(0.2)
        self.process.wait(timeout=30)


def start_cluster(root: Path, *, head_docker: int, workers: int, worker_docker: int = 1) -> tuple[str, list[RayNode]]:
    """A head on 127.0.0.1 and ``workers`` nodes on 127.0.0.2, ...: the head's address and the nodes
    (head first). Nodes start one at a time: two starting at once time out on a 2-core machine."""
    port = free_ports(1)
    address = f"127.0.0.1:{port}"
    nodes = [RayNode("head", ["--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                              f"--resources={{\"docker\": {head_docker}}}", "--include-dashboard=false",
                              f"--temp-dir=/tmp/live-swe-ray-{os.getpid()}"],  # Ray's socket paths stay short
                     root / "head.log")]
    try:
        nodes[0].wait_started()
        for n in range(workers):
            nodes.append(RayNode(chr(ord("a") + n), [f"--address={address}", f"--node-ip-address=127.0.0.{n + 2}",
                                                     f"--resources={{\"docker\": {worker_docker}}}"],
                                 root / f"{chr(ord('a') + n)}.log"))
            nodes[-1].wait_started()
    except BaseException:
        for node in reversed(nodes):
            node.stop()
        raise
    return address, nodes
