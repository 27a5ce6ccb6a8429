"""Data held by the inventory."""

from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    quantity: int = 0

    def __post_init__(self) -> None:
        if not self.sku:
            raise ValueError("an item needs a SKU")
