"""Errors raised by the inventory."""


class InventoryError(Exception):
    """Base class for inventory errors."""


class UnknownItemError(InventoryError, KeyError):
    """The SKU is not in the inventory."""

    def __init__(self, sku: str):
        super().__init__(sku)
        self.sku = sku

    def __str__(self) -> str:
        return f"unknown item {self.sku!r}"
