"""Stock keeping for a parts shelf."""

from inventory.errors import InventoryError, OutOfStockError, UnknownItemError
from inventory.models import Item
from inventory.report import format_report
from inventory.store import Inventory

__all__ = ["Inventory", "InventoryError", "Item", "OutOfStockError", "UnknownItemError", "format_report"]
