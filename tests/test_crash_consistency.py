"""Kill ``live-swe run`` (SIGKILL) at random moments of a local and a Docker run; each resume must
finish with the full patch and a log that validates. The full figure (>= 50 kills) comes from
``python benchmarks/crash_consistency.py``; this runs the same driver with a few kills."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).resolve().parent.parent / "benchmarks" / "crash_consistency.py"


def test_random_kills_of_a_local_and_a_docker_run_all_recover(base_image, tmp_path):
    env = {**os.environ, "LIVE_SWE_TEST_BASE_IMAGE": base_image}
    done = subprocess.run([sys.executable, str(DRIVER), "--local", "3", "--docker", "3", "--seed", "7", "--json"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["kills"] == 6, done.stderr
    assert summary["clean_recoveries"] == 6, done.stderr
    assert done.returncode == 0
