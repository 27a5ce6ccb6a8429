"""Validate a scaffold against another on the same instances, and record the result for promote.

Both scaffolds are run on exactly the same instances (the benchmark runner, then the harness), the
per-instance outcomes are paired, and :mod:`godel.stats` gives the delta, its bootstrap interval,
McNemar's p-value and the verdict. Each validation is recorded in the archive with the content
digest of both scaffolds, so ``scaffold promote`` can check the very content it promotes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from godel.archive import Archive, scaffold_digest
from godel.evaluation import Evaluate, normalise
from godel.stats import Comparison, Pair, compare, pair_outcomes


@dataclass
class Validation:
    record_id: str
    scaffold: str
    against: str
    suite: str
    model: str
    pairs: list[Pair]
    comparison: Comparison

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.record_id, "scaffold": self.scaffold, "against": self.against, "suite": self.suite,
            "model": self.model,
            "pairs": [{"instance_id": p.instance_id, "candidate": p.candidate, "baseline": p.baseline}
                      for p in self.pairs],
            **self.comparison.to_json(),
        }


def work_dir(archive: Archive, key: list[Any]) -> Path:
    """Where a validation's batch runs live; the same inputs reuse it, so a rerun resumes."""
    digest = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return archive.root / "validation-runs" / digest


def validate(scaffold: str, against: str, *, suite: str, model: str, instance_ids: list[str],
             evaluate: Evaluate, archive: Archive | None = None, seed: int = 0, resamples: int = 10000,
             alpha: float = 0.05) -> Validation:
    archive = archive or Archive.default()
    candidate_digest, baseline_digest = scaffold_digest(scaffold), scaffold_digest(against)
    ids = sorted(set(instance_ids))
    root = work_dir(archive, [candidate_digest, baseline_digest, suite, model, ids])
    candidate = normalise(evaluate(scaffold, ids, root / "candidate"), ids)
    baseline = normalise(evaluate(against, ids, root / "baseline"), ids)
    pairs = pair_outcomes({i: o.resolved for i, o in candidate.items()}, {i: o.resolved for i, o in baseline.items()})
    comparison = compare(pairs, alpha=alpha, resamples=resamples, seed=seed)
    record = {
        "scaffold": scaffold, "scaffold_digest": candidate_digest,
        "against": against, "against_digest": baseline_digest,
        "suite": suite, "model": model, "instances": ids, "work_dir": str(root),
        "candidate": {i: o.resolved for i, o in candidate.items()},
        "baseline": {i: o.resolved for i, o in baseline.items()},
        "cost": sum(o.cost for o in candidate.values()) + sum(o.cost for o in baseline.values()),
        **comparison.to_json(),
    }
    record_id = archive.record_validation(record)
    return Validation(record_id, scaffold, against, suite, model, pairs, comparison)


def latest_better(archive: Archive, digest: str) -> dict[str, Any] | None:
    """The newest recorded validation that found this exact content better than its baseline."""
    found = [v for v in archive.validations() if v.get("scaffold_digest") == digest and v.get("verdict") == "better"]
    return found[-1] if found else None


def format_report(validation: Validation) -> str:
    c = validation.comparison
    width = max([len(p.instance_id) for p in validation.pairs] + [8])
    lines = [f"{'instance':<{width}}  candidate  baseline"]
    for p in validation.pairs:
        mark = "+" if p.candidate and not p.baseline else "-" if p.baseline and not p.candidate else " "
        lines.append(f"{p.instance_id:<{width}}  {'yes' if p.candidate else 'no':<9}  "
                     f"{'yes' if p.baseline else 'no':<8} {mark}")
    n = max(c.n, 1)
    lines += [
        "",
        f"candidate {validation.scaffold}: {c.candidate_resolved}/{c.n} resolved ({c.candidate_resolved / n:.1%})",
        f"baseline  {validation.against}: {c.baseline_resolved}/{c.n} resolved ({c.baseline_resolved / n:.1%})",
        f"delta {c.delta * 100:+.1f} points, 95% interval [{c.ci_low * 100:+.1f}, {c.ci_high * 100:+.1f}] "
        f"(paired bootstrap, {c.resamples} resamples, seed {c.seed})",
        f"McNemar exact p = {c.p_value:.4g} ({c.wins} won, {c.losses} lost)",
        f"verdict: {c.verdict}  (recorded as {validation.record_id})",
    ]
    return "\n".join(lines)
