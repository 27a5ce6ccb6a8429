from csvtools import write_rows


def test_write_rows():
    rows = [{"name": "A", "temp": 21.5}, {"name": "B", "temp": None}]
    assert write_rows(rows, ["name", "temp"]) == "name,temp\nA,21.5\nB,\n"


def test_custom_delimiter():
    assert write_rows([{"a": 1, "b": 2}], ["a", "b"], delimiter=";") == "a;b\n1;2\n"
