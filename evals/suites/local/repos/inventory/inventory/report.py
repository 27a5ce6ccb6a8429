"""Plain-text stock reports."""

from __future__ import annotations

from inventory.store import Inventory


def format_report(inventory: Inventory) -> str:
    """One line per item: SKU, name, quantity; then a total."""
    lines = []
    total = 0
    for item in inventory.items():
        lines.append(f"{item.sku:<12} {item.name:<24} {item.quantity:>6}")
        total += item.quantity
    lines.append(f"{'TOTAL':<37} {total:>6}")
    return "\n".join(lines)
