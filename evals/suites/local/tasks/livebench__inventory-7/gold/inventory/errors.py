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


class OutOfStockError(InventoryError):
    """More units were requested than the shelf holds."""

    def __init__(self, sku: str, requested: int, available: int):
        super().__init__(sku, requested, available)
        self.sku = sku
        self.requested = requested
        self.available = available

    def __str__(self) -> str:
        return (
            f"not enough {self.sku!r} in stock: "
            f"requested {self.requested}, available {self.available}"
        )
