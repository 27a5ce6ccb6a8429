import pytest

from inventory import Inventory, InventoryError, OutOfStockError, UnknownItemError


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


def test_remove_more_than_available_fails(inv):
    with pytest.raises(OutOfStockError) as excinfo:
        inv.remove("M3-NUT", 81)
    assert excinfo.value.requested == 81
    assert excinfo.value.available == 80
    assert "requested 81, available 80" in str(excinfo.value)
    assert inv.quantity("M3-NUT") == 80


def test_out_of_stock_is_an_inventory_error(inv):
    with pytest.raises(InventoryError):
        inv.remove("M3-BOLT", 500)


def test_remove_everything_leaves_zero(inv):
    inv.remove("M3-NUT", 80)
    assert inv.quantity("M3-NUT") == 0
