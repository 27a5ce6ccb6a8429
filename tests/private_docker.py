"""A private Docker engine that a test may stop and start again, never the shared one.

It has its own data root, exec root, socket, pid file and bridge (``ip link add NAME type bridge``
and ``--bridge NAME``; never ``--bridge none``, which deletes the shared engine's docker0), and no
iptables rules (the shared engine's chains are left alone). The base image is copied in with
``docker save | docker load``."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path


class PrivateDocker:
    def __init__(self, root: Path):
        self.root = root
        self.socket = root / "docker.sock"
        self.host = f"unix://{self.socket}"
        self.bridge = f"lsw{secrets.token_hex(4)}"  # at most 15 characters
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> str | None:
        """Why a private engine cannot run here, or None."""
        if os.geteuid() != 0:
            return "a private Docker engine needs root (CI runs as root)"
        if not shutil.which("dockerd") or not shutil.which("ip"):
            return "dockerd or ip is not installed"
        return None

    def start(self) -> None:
        if not _link_exists(self.bridge):
            subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", f"10.{secrets.randbelow(200) + 20}.{secrets.randbelow(250)}.1/24",
                            "dev", self.bridge], check=True)
            subprocess.run(["ip", "link", "set", self.bridge, "up"], check=True)
        log = open(self.root / "dockerd.log", "ab")
        self.process = subprocess.Popen(
            ["dockerd", "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
             "-H", self.host, "--pidfile", str(self.root / "docker.pid"), "--bridge", self.bridge,
             "--iptables=false", "--ip-masq=false"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while self.docker("version", check=False).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the private dockerd did not start: {(self.root / 'dockerd.log').read_text()[-2000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the engine as a service manager would (SIGTERM), and wait until it is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def remove(self) -> None:
        self.stop()
        if _link_exists(self.bridge):
            subprocess.run(["ip", "link", "del", self.bridge], check=False)
        subprocess.run(["umount", "-R", str(self.root / "exec")], check=False, capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def docker(self, *args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "-H", self.host, *args], capture_output=True, text=True, check=check,
                              timeout=120, **kwargs)

    def load(self, image: str) -> None:
        """Copy ``image`` from the shared engine into this one."""
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        subprocess.run(["docker", "-H", self.host, "load"], stdin=save.stdout, check=True, capture_output=True,
                       timeout=600)
        save.stdout.close()
        assert save.wait() == 0


def _link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0
