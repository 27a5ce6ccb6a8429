from inventory import Inventory, format_report


def test_report_lists_items_and_total():
    inv = Inventory()
    inv.add("M3-BOLT", "M3 bolt, 10 mm", 120)
    inv.add("M3-NUT", "M3 nut", 80)
    lines = format_report(inv).splitlines()
    assert lines[0].split()[0] == "M3-BOLT"
    assert lines[0].split()[-1] == "120"
    assert lines[-1].split() == ["TOTAL", "200"]
