"""Detection recall and precision of the behavioural contracts on the scenario suite.

Runs every scenario of tests/fixtures/contract_scenarios/ (scripted trajectories on real git
repositories, local environment with bubblewrap, violations labelled by hand) and prints, per
scenario, the labelled and detected (step, rule) pairs, then recall, precision, the share of hard
violations contained (refused, undone or masked), and how many submitted patches still hold a
hard violation (must be 0).

    python benchmarks/contract_scenarios.py [--only NAME-SUBSTRING]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))  # the scenario runner and the repository helper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["LIVE_SWE_HOME"] = tempfile.mkdtemp(prefix="live-swe-contract-scenarios-")
    from conftest import make_git_repo
    from contract_scenarios import load_scenarios, run_scenario, score

    outcomes = []
    started = time.monotonic()
    for scenario in load_scenarios():
        if args.only not in scenario["name"]:
            continue
        with tempfile.TemporaryDirectory() as work:
            outcome = run_scenario(scenario, Path(work), make_git_repo)
        outcomes.append(outcome)
        missed, extra = outcome.expected - outcome.found, outcome.found - outcome.expected
        mark = "ok" if not (missed or extra or outcome.problems) else "!!"
        print(f"{mark} {scenario['file']:<16} {outcome.name:<58} labelled {len(outcome.expected)} detected "
              f"{len(outcome.found)}" + (f" missed {sorted(missed)}" if missed else "")
              + (f" extra {sorted(extra)}" if extra else "") + (f" problems {outcome.problems}" if outcome.problems else ""))
    figures = score(outcomes)
    print(f"\n{figures['scenarios']} scenarios, {figures['labelled']} labelled violations, {figures['detected']} detected "
          f"in {time.monotonic() - started:.0f} s")
    print(f"recall {figures['recall']:.3f}  precision {figures['precision']:.3f}  "
          f"hard violations contained {figures['hard_contained']:.3f}  "
          f"patches holding a hard violation {figures['reaching_patch']}")


if __name__ == "__main__":
    main()
