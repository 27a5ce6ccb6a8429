"""The inventory itself."""

from __future__ import annotations

from inventory.errors import UnknownItemError
from inventory.models import Item


class Inventory:
    def __init__(self) -> None:
        self._items: dict[str, Item] = {}

    def add(self, sku: str, name: str, quantity: int) -> Item:
        """Add ``quantity`` units of ``sku`` (creating the item when it is new)."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        item = self._items.get(sku)
        if item is None:
            item = self._items[sku] = Item(sku, name, 0)
        item.quantity += quantity
        return item

    def remove(self, sku: str, quantity: int) -> Item:
        """Take ``quantity`` units of ``sku`` off the shelf."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        item = self.get(sku)
        item.quantity -= quantity
        return item

    def get(self, sku: str) -> Item:
        try:
            return self._items[sku]
        except KeyError:
            raise UnknownItemError(sku) from None

    def quantity(self, sku: str) -> int:
        return self.get(sku).quantity

    def items(self) -> list[Item]:
        """All items, ordered by SKU."""
        return [self._items[sku] for sku in sorted(self._items)]

    def low_stock(self, threshold: int) -> list[Item]:
        """Items with fewer than ``threshold`` units, lowest quantity first."""
        low = [item for item in self._items.values() if item.quantity < threshold]
        return sorted(low, key=lambda item: (item.quantity, item.sku))
