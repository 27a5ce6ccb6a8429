from csvtools import read_rows, write_rows


def test_write_rows():
    rows = [{"name": "A", "temp": 21.5}, {"name": "B", "temp": None}]
    assert write_rows(rows, ["name", "temp"]) == "name,temp\nA,21.5\nB,\n"


def test_custom_delimiter():
    assert write_rows([{"a": 1, "b": 2}], ["a", "b"], delimiter=";") == "a;b\n1;2\n"


def test_fields_with_delimiter_and_quotes_are_quoted():
    rows = [{"name": "Smith, J.", "note": 'said "ok"'}]
    assert write_rows(rows, ["name", "note"]) == 'name,note\n"Smith, J.","said ""ok"""\n'


def test_round_trip():
    rows = [{"name": "Smith, J.", "note": 'said "ok"'}, {"name": "plain", "note": ""}]
    assert read_rows(write_rows(rows, ["name", "note"])) == rows


def test_custom_delimiter_triggers_quoting():
    assert write_rows([{"a": "x;y", "b": "p,q"}], ["a", "b"], delimiter=";") == 'a;b\n"x;y";p,q\n'
