"""A Docker engine of a test's own, to stop and restart without touching the shared one.

Its own data root, exec root, socket and pid file, and its own bridge made here with
``ip link add NAME type bridge`` (never ``--bridge none``: that deletes the shared engine's
``docker0``). It leaves iptables alone; containers on it need no network. Images come from the
shared engine with ``docker save | docker load``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path


def _free_subnet() -> str:
    """A /24 under 10.213.0.0/16 that no interface of this machine uses."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    for third in range(10, 250):
        if f"10.213.{third}." not in used:
            return f"10.213.{third}.1/24"
    raise RuntimeError("no free 10.213.x.0/24 for a private Docker bridge")


class PrivateEngine:
    """``dockerd`` on ``unix://<root>/docker.sock``; ``stop()``/``start()`` restart it in place."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="live-swe-dockerd-", dir="/tmp"))
        self.socket = self.root / "docker.sock"
        self.host = f"unix://{self.socket}"
        self.bridge = "lsw" + secrets.token_hex(4)  # interface names: at most 15 characters
        self.log = self.root / "dockerd.log"
        self._process: subprocess.Popen | None = None
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
        subprocess.run(["ip", "addr", "add", _free_subnet(), "dev", self.bridge], check=True)
        subprocess.run(["ip", "link", "set", self.bridge, "up"], check=True)

    @staticmethod
    def can_run() -> str:
        """Why a private engine cannot run here ('' when it can)."""
        if os.geteuid() != 0:
            return "a private dockerd needs root"
        missing = [tool for tool in ("dockerd", "ip", "docker") if shutil.which(tool) is None]
        return f"not installed: {', '.join(missing)}" if missing else ""

    def docker(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "-H", self.host, *args], check=True, capture_output=True, **kwargs)

    def start(self, wait: float = 60) -> None:
        command = ["dockerd", "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
                   "-H", self.host, "--pidfile", str(self.root / "docker.pid"), "--bridge", self.bridge,
                   "--iptables=false", "--ip-masq=false"]
        with self.log.open("a") as log:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                             start_new_session=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the private dockerd exited: {self.log.read_text()[-2000:]}")
            if subprocess.run(["docker", "-H", self.host, "version"], capture_output=True).returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError(f"the private dockerd did not answer in {wait} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM, as `systemctl restart docker` does; it kills its containers and exits."""
        if self._process is None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=30)
        self._process = None

    def load_image(self, image: str) -> None:
        """Copy ``image`` from the shared engine into this one."""
        saved = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        try:
            self.docker("load", stdin=saved.stdout)
        finally:
            saved.stdout.close()
            saved.wait(timeout=300)

    def close(self) -> None:
        self.stop()
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
