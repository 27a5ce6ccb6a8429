"""The wheel a user installs: built from this checkout, installed without extras into a fresh
virtual environment (its dependencies from this machine's site-packages; only the build backend is fetched), it has
the terminal UI's library as a plain dependency, says its version, and `live-swe tui` without a
terminal exits at once with a clear error instead of drawing into a pipe."""

from __future__ import annotations

import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_installs_without_extras_and_answers_at_once(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "-w", str(tmp_path / "dist"), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob("live_swe-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(archive.read(n).decode() for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert any(line.startswith("Requires-Dist: textual") and "extra ==" not in line for line in requires), requires

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    live_swe = str(venv / "bin" / "live-swe")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import live_swe; print(live_swe.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert str(venv) in where.stdout, where.stdout  # the wheel's copy, not this checkout

    version = subprocess.run([live_swe, "--version"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("live-swe 0."), version

    started = time.monotonic()
    tui = subprocess.run([live_swe, "tui"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert tui.returncode == 2 and "the terminal UI needs a terminal" in tui.stderr, tui
    assert time.monotonic() - started < 30  # at once, not after drawing into the pipe until killed
