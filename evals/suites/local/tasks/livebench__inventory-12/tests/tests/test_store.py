import pytest

from inventory import Inventory, UnknownItemError


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add("M3-BOLT", "M3 bolt, 10 mm", 120)
    inventory.add("M3-NUT", "M3 nut", 80)
    return inventory


def test_add_accumulates(inv):
    inv.add("M3-BOLT", "M3 bolt, 10 mm", 30)
    assert inv.quantity("M3-BOLT") == 150


def test_remove_reduces_quantity(inv):
    inv.remove("M3-NUT", 30)
    assert inv.quantity("M3-NUT") == 50


def test_unknown_item(inv):
    with pytest.raises(UnknownItemError):
        inv.remove("M4-BOLT", 1)


def test_items_sorted_by_sku(inv):
    inv.add("A-WASHER", "Washer", 10)
    assert [item.sku for item in inv.items()] == ["A-WASHER", "M3-BOLT", "M3-NUT"]


def test_non_positive_quantity_rejected(inv):
    with pytest.raises(ValueError):
        inv.add("M3-BOLT", "M3 bolt, 10 mm", 0)


def test_low_stock_lists_items_below_threshold(inv):
    inv.add("A-WASHER", "Washer", 4)
    inv.add("B-SPRING", "Spring", 4)
    assert [item.sku for item in inv.low_stock(100)] == ["A-WASHER", "B-SPRING", "M3-NUT"]


def test_low_stock_is_strict(inv):
    assert inv.low_stock(80) == []
