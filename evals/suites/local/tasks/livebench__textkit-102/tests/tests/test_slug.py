from textkit import slugify


def test_simple_sentence():
    assert slugify("Hello World") == "hello-world"


def test_accents_are_folded():
    assert slugify("Crème Brûlée") == "creme-brulee"


def test_custom_separator():
    assert slugify("Release notes", separator="_") == "release_notes"


def test_punctuation_and_spaces_collapse_to_one_separator():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("Part 1:  Setup") == "part-1-setup"


def test_runs_collapse_with_custom_separator():
    assert slugify("a & b", separator="_") == "a_b"
