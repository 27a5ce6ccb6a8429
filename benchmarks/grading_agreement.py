"""The grading analysers on the labelled set (evals/grading/labelled.yaml): detection and
step-localisation agreement with the hand labels, and false alarms.

Every trajectory is run through the real loop (scripted replies, local environment, the local
suite's repositories), then graded. With ``--judge MODEL`` each trajectory is also graded by that
judge (``--limit N`` trajectories, stratified by kind), and its scores are printed next to the
analysers' (the embedded local model: ``--judge local/qwen2.5-coder-0.5b``).

    python benchmarks/grading_agreement.py [--workers 2] [--json] [--judge MODEL --limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--judge", default=None)
    parser.add_argument("--limit", type=int, default=None, help="trajectories graded by the judge")
    parser.add_argument("--keep", default=None, help="run in this folder and keep it (sessions, repositories)")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="live-swe-labelled-"))
    os.environ["LIVE_SWE_HOME"] = str(workdir / "home")

    from live_swe.bench.labelled import agreement, load_set, run_set
    from live_swe.grading.analysers import analyse
    from live_swe.grading.log import load_trajectory
    from live_swe.session.store import SessionStore

    items = load_set()
    started = time.monotonic()
    sessions = run_set(items, workdir, workers=args.workers, say=lambda line: print(line, file=sys.stderr))
    ran = time.monotonic() - started
    store = SessionStore(workdir / "sessions")
    trajectories = {item.id: load_trajectory(store.open(sessions[item.id])) for item in items}
    findings = {item_id: analyse(t) for item_id, t in trajectories.items()}
    figures = agreement(items, findings).to_json()
    figures["splits"] = {split: agreement([i for i in items if i.split == split], findings).to_json()
                         for split in sorted({i.split for i in items})}
    figures.update({"trajectories": len(items), "run_seconds": round(ran, 1), "workdir": str(workdir)})
    if args.judge:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from judge_agreement import judge_figures  # a sibling script

        figures["judge"] = judge_figures(items, trajectories, findings, args.judge, args.limit)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"labelled set: {len(items)} trajectories, {figures['labels']} injected errors "
          f"({figures['checkable_labels']} checkable by design), run through the loop in {ran:.0f} s")
    print(f"{'kind':<20} {'labels':>6} {'detected':>9} {'localised':>10}")
    for kind, row in figures["by_kind"].items():
        print(f"{kind:<20} {row['labels']:>6} {row['detected']:>9} {row['localised']:>10}")
    print(f"detection {figures['detection']:.2f}, localisation {figures['localisation']:.2f} "
          f"(checkable only: {figures['checkable_detection']:.2f} / {figures['checkable_localisation']:.2f}); "
          f"anchor, Agent GPA judges on TRAIL/GAIA: 0.95 / 0.86")
    print(f"false alarms: {figures['false_alarms']} of {figures['family_findings']} findings "
          f"(precision {figures['precision']:.2f}); clean trajectories flagged: "
          f"{figures['clean_flagged']} of {figures['clean_trajectories']}")
    for split, part in figures["splits"].items():
        print(f"  {split:<8} {part['labels']:>3} errors: detection {part['detection']:.2f}, localisation "
              f"{part['localisation']:.2f}, precision {part['precision']:.2f}, clean flagged "
              f"{part['clean_flagged']} of {part['clean_trajectories']}")
    for line in figures["misses"]:
        print(f"  miss: {line}")
    for line in figures["alarms"]:
        print(f"  false alarm: {line}")
    judge = figures.get("judge")
    if judge:
        print(f"\njudge {judge['model']} on {judge['trajectories']} trajectories ({judge['metric_verdicts']} metric "
              f"verdicts, {judge['calls']} calls, median {judge['median_seconds_per_trajectory']:.0f} s per trajectory):")
        print(f"  replies read: {judge['parsed']} of {judge['metric_verdicts']}")
        print(f"  injected errors whose metric scored below 3: {judge['detected']} of {judge['labels']} "
              f"(analysers: {judge['analysers_detected']}); naming a labelled step: {judge['localised']}")
        print(f"  clean trajectories, verdicts below 3: {judge['clean_alarms']} of {judge['clean_verdicts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
