"""Effective budgets: the kernel's, tightened (never loosened) by the scaffold."""

from __future__ import annotations

from live_swe.config import KernelLimits, budget_amount
from live_swe.scaffolding.policy import ScaffoldLimits


def effective_limits(kernel: KernelLimits, scaffold: ScaffoldLimits) -> KernelLimits:
    merged = kernel.model_dump()
    for key, value in scaffold.model_dump().items():
        if value is not None and budget_amount(key, value) < budget_amount(key, merged[key]):
            merged[key] = value
    return KernelLimits(**merged)


def loosened(before: ScaffoldLimits, after: ScaffoldLimits, kernel: KernelLimits) -> list[str]:
    """Budgets that ``after`` raises compared with ``before`` (both read against the kernel's)."""
    old, new = effective_limits(kernel, before), effective_limits(kernel, after)
    return [
        f"{key}: {_shown(key, getattr(old, key))} -> {_shown(key, getattr(new, key))}"
        for key in KernelLimits.model_fields
        if budget_amount(key, getattr(new, key)) > budget_amount(key, getattr(old, key))
    ]


def _shown(key: str, value: float) -> str:
    return "no limit" if budget_amount(key, value) == float("inf") else str(value)
