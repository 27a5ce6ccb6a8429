from textkit import slugify


def test_simple_sentence():
    assert slugify("Hello World") == "hello-world"


def test_accents_are_folded():
    assert slugify("Crème Brûlée") == "creme-brulee"


def test_custom_separator():
    assert slugify("Release notes", separator="_") == "release_notes"
