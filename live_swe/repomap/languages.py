"""The languages the repository map reads: one grammar wheel each, and one tags query.

Grammars come from per-language wheels (tree-sitter-python, -javascript, -bash) that ship the
compiled parser, so the map works offline; nothing is downloaded at run time.

Each query captures ``def.<kind>`` for the name of a definition and ``ref`` for every name use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

_PYTHON = """
(class_definition name: (identifier) @def.class)
(function_definition name: (identifier) @def.function)
(module (expression_statement (assignment left: (identifier) @def.constant)))
(identifier) @ref
"""

_JAVASCRIPT = """
(class_declaration name: (_) @def.class)
(function_declaration name: (identifier) @def.function)
(generator_function_declaration name: (identifier) @def.function)
(method_definition name: (property_identifier) @def.method)
(variable_declarator name: (identifier) @def.function value: [(arrow_function) (function_expression)])
(identifier) @ref
(property_identifier) @ref
"""

_BASH = """
(function_definition name: (word) @def.function)
(command_name (word) @ref)
"""


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    module: str  # the grammar wheel's import name
    query: str


LANGUAGES = {
    "python": LanguageSpec("python", "tree_sitter_python", _PYTHON),
    "javascript": LanguageSpec("javascript", "tree_sitter_javascript", _JAVASCRIPT),
    "bash": LanguageSpec("bash", "tree_sitter_bash", _BASH),
}

EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".sh": "bash",
    ".bash": "bash",
}


def language_for(path: str) -> str | None:
    dot = path.rfind(".")
    return EXTENSIONS.get(path[dot:].lower()) if dot >= 0 else None


@cache
def parser_and_query(language: str):
    """The parser and compiled query for ``language`` (built once per process)."""
    import tree_sitter

    spec = LANGUAGES[language]
    grammar = importlib.import_module(spec.module)
    lang = tree_sitter.Language(grammar.language())
    return tree_sitter.Parser(lang), tree_sitter.Query(lang, spec.query)
