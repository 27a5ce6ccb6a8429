"""Grading speed: the analysers on a 100-step and a 400-step trajectory (target: at most 50 ms for
100 steps, growing linearly), next to the cost of reading the same session log (``json.loads`` of
every line), in the same run.

Both trajectories are made by the real loop: a scripted model runs a repeating mix of searches,
reads, edits and checks (with some repeats and re-reads, so the analysers have findings to report)
on a copy of the local suite's textkit repository, then submits.

    python benchmarks/grade_speed.py [--steps 100 400] [--repeat 21]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

CYCLE = [
    "grep -rn 'def truncate' textkit",
    "cat textkit/truncate.py",
    "sed -n '10,17p' textkit/truncate.py",
    "python3 -c \"from textkit import truncate; print(truncate('The quick brown fox', 10))\"",
    "sed -i 's/ELLIPSIS = \"...\"/ELLIPSIS = \"...\"/' textkit/truncate.py",
    "python3 -c \"from textkit import slugify; assert slugify('a b') == 'a-b'\"",
    "grep -rn slugify textkit",
    "cat textkit/slug.py",
]
PLAN = "PLAN:\n1. Read truncate() in textkit/truncate.py\n2. Reproduce with truncate()\n3. Fix the slice\n4. Run a check\n\n"


def make_session(workdir: Path, steps: int) -> Path:
    from live_swe.bench.labelled import prepare_repository
    from live_swe.config import KernelLimits
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, RunRequest, start_run
    from live_swe.session.store import SessionStore

    repo = prepare_repository("livebench__textkit-101", workdir / f"repo-{steps}")
    replies = [Reply(f"{PLAN if i == 0 else ''}THOUGHT: step {i}.\n\n```bash\n{CYCLE[i % len(CYCLE)]}\n```")
               for i in range(steps - 1)]
    replies.append(Reply("THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"))
    store = SessionStore(workdir / "sessions")
    model = ScriptedModel(replies)
    result = start_run(RunRequest(task="Fix truncate().", model="scripted:speed", repo=repo,
                                  limits=KernelLimits(step_limit=steps + 5)),
                       RunHooks(model_factory=lambda _name: model), store=store)
    return store.root / result.session_id


def median_ms(action, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    workdir = Path(tempfile.mkdtemp(prefix="live-swe-grade-speed-"))
    os.environ["LIVE_SWE_HOME"] = str(workdir / "home")

    from live_swe.grading.analysers import analyse
    from live_swe.grading.grade import grade
    from live_swe.grading.log import load_trajectory
    from live_swe.grading.session import open_session_dir

    print(f"{'steps':>5} {'analysers':>10} {'read+grade':>11} {'json.loads of the log':>22} {'findings':>9}")
    rows = []
    for steps in args.steps:
        directory = make_session(workdir, steps)
        session = open_session_dir(directory)
        trajectory = load_trajectory(session)
        lines = (directory / "events.jsonl").read_text().splitlines()

        def analysers_only(t=trajectory):
            for step in t.steps:  # command facts are cached per step: measure them too
                step.__dict__.pop("facts", None)
            analyse(t)

        analysers = median_ms(analysers_only, args.repeat)
        whole = median_ms(lambda s=session: grade(load_trajectory(s)), args.repeat)
        anchor = median_ms(lambda ls=lines: [json.loads(line) for line in ls], args.repeat)
        rows.append((len(trajectory.steps), analysers))
        print(f"{len(trajectory.steps):>5} {analysers:>8.1f}ms {whole:>9.1f}ms {anchor:>20.1f}ms "
              f"{len(analyse(trajectory)):>9}")
    if len(rows) == 2:
        (n1, t1), (n2, t2) = rows
        print(f"growth: {n2 / n1:.1f}x the steps took {t2 / t1:.1f}x the time (linear: {n2 / n1:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
