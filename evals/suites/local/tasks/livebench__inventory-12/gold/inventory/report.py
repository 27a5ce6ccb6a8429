"""Plain-text stock reports."""

from __future__ import annotations

from inventory.store import Inventory


def format_report(inventory: Inventory, low_stock_threshold: int | None = None) -> str:
    """One line per item: SKU, name, quantity; then a total.

    With ``low_stock_threshold``, items below it are marked ``LOW``.
    """
    low = set()
    if low_stock_threshold is not None:
        low = {item.sku for item in inventory.low_stock(low_stock_threshold)}
    lines = []
    total = 0
    for item in inventory.items():
        line = f"{item.sku:<12} {item.name:<24} {item.quantity:>6}"
        if item.sku in low:
            line += " LOW"
        lines.append(line)
        total += item.quantity
    lines.append(f"{'TOTAL':<37} {total:>6}")
    return "\n".join(lines)
