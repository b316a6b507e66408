"""The catalogue's data and the source agree both ways (issue 45): every code the source names at a
call site (`Message.of("config.min", ...)`, `text_of(...)`) is in some texts.json, and every code in
a texts.json is named by the product's code (a string of its source, or the prefix of a
`table`/`texts_under` that reads it), so that a code renamed or no longer said fails here."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from catalogue import PACKAGES, all_texts
from tests.conftest import parsed_source

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = (*PACKAGES, "pai_portal")
CALLED = re.compile(r"\b(?:Message\.of|text_of)\(\s*\"([^\"]+)\"")
READ_UNDER = re.compile(r"\b(?:texts_under|table)\(\s*\"([^\"]+)\"")


def python_files(folders: tuple[str, ...]) -> list[Path]:
    return [path for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))]


def strings_of(path: Path) -> list[str]:
    """The module's string constants that are not docstrings (a docstring's mention is no use): one
    walk of its tree, a string statement's subtree left out (ast.walk, twice, was most of this file's
    CPU)."""
    found: list[str] = []
    stack: list[ast.AST] = [parsed_source(path)]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                found.append(node.value)
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, list):
                    stack.extend(item for item in value if isinstance(item, ast.AST))
                elif isinstance(value, ast.AST):
                    stack.append(value)
    return found


@cache
def product_words() -> tuple[set[str], tuple[str, ...]]:
    """Every word of the product's strings (a string may hold several codes, space-separated) and
    its templates, and the prefixes its tables read."""
    words: set[str] = set()
    prefixes: list[str] = []
    for path in python_files(PRODUCT):
        for string in strings_of(path):
            words.update(string.split())
        prefixes += READ_UNDER.findall(path.read_text())
    for path in sorted((ROOT / "templates").rglob("*.html")):
        words.update(word.strip(".") for word in re.findall(r"[\w.]+", path.read_text()))
    return words, tuple(prefixes)


def catalogue_codes() -> set[str]:
    return {code for code in all_texts() if not code.startswith("test.")}


def test_every_code_named_at_a_call_site_is_in_the_catalogue():
    named = {
        (path.relative_to(ROOT).as_posix(), code)
        for path in python_files((*PRODUCT, "tests", "bench"))
        for code in CALLED.findall(path.read_text())
    }
    assert sorted((where, code) for where, code in named if code not in all_texts()) == []


def test_every_prefix_a_table_reads_has_codes():
    _words, prefixes = product_words()
    assert [prefix for prefix in prefixes if not any(code.startswith(prefix) for code in catalogue_codes())] == []


def test_every_catalogue_code_is_named_by_the_product():
    words, prefixes = product_words()
    unnamed = [code for code in sorted(catalogue_codes()) if code not in words and not code.startswith(prefixes)]
    assert unnamed == []
