"""The split of a suite and the staged evaluation of a child.

Split: the suite's instance ids, sorted then shuffled by a seeded generator, are cut into a held-out
*report* split (never run while evolving) and a *selection* split (used to diagnose, stage and
select). The same ids and seed always give the same split.

Stages: stage k evaluates the first ``size_k`` instances of the selection split (so each stage
contains the one before and its results are reused). A child whose resolved rate at a stage is
below that stage's threshold stops there; the last stage's rate is the node's score.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from live_swe.errors import UserError


@dataclass(frozen=True)
class Split:
    selection: list[str]
    report: list[str]


def split_instances(instance_ids: list[str], *, seed: int, report_fraction: float) -> Split:
    if not 0 < report_fraction < 1:
        raise UserError(f"--report-fraction must be between 0 and 1 (exclusive), got {report_fraction}")
    ids = sorted(set(instance_ids))
    if len(ids) < 2:
        raise UserError(f"evolving needs at least 2 instances to split into selection and report; got {len(ids)}")
    random.Random(seed).shuffle(ids)
    n_report = min(len(ids) - 1, max(1, math.ceil(report_fraction * len(ids))))
    return Split(selection=ids[n_report:], report=ids[:n_report])


class Stage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(ge=1)
    threshold: float = Field(default=0.0, ge=0, le=1)  # minimum resolved rate to go on


def parse_stages(sizes: str, thresholds: str) -> list[Stage]:
    """``"3,8"`` and ``"0.34,0"`` -> two stages. Sizes must grow."""
    try:
        size_list = [int(s) for s in sizes.split(",") if s.strip()]
        threshold_list = [float(t) for t in thresholds.split(",") if t.strip()]
    except ValueError:
        raise UserError(f"--stages {sizes!r} / --thresholds {thresholds!r}: comma-separated numbers expected") from None
    if not size_list or len(size_list) != len(threshold_list):
        raise UserError("--stages and --thresholds need the same number of comma-separated entries")
    if any(b <= a for a, b in zip(size_list, size_list[1:], strict=False)):
        raise UserError(f"--stages {sizes!r}: each stage must be larger than the one before")
    try:
        return [Stage(size=s, threshold=t) for s, t in zip(size_list, threshold_list, strict=True)]
    except ValueError as exc:
        raise UserError(f"--stages / --thresholds: {exc}") from None


def stage_instances(selection: list[str], stages: list[Stage]) -> list[list[str]]:
    """Each stage's instances (nested prefixes of the selection split, capped at its length)."""
    return [selection[: min(stage.size, len(selection))] for stage in stages]


def passes(results: dict[str, bool], instances: list[str], stage: Stage) -> bool:
    rate = sum(results.get(i, False) for i in instances) / len(instances) if instances else 0.0
    return rate >= stage.threshold
