"""Move `Text("area.code", "English ...")` declarations out of the Python source into each area's
texts.json (catalogue's data files), and make their uses name the code (issue 45).

    .venv/bin/python scripts/codemod_texts.py          convert what is left, then ruff fixes the files
    .venv/bin/python scripts/codemod_texts.py --dry    say what it would convert, change nothing

Rerunnable: on a tree already converted it converts only the declarations still in the source (a
merged branch's new ones) and the uses of names converted before (kept in NAMES below, beside this
script). What it writes:

- each module-level `Text(...)` of a module becomes an entry of the texts.json in the module's
  folder (appended; an entry whose English changed in the source is replaced by the source's);
- `NAME = Text(...)` statements go (with a comment block directly above them); a `Text(...)` inside
  another expression becomes `text_of("code")`;
- a use of such a NAME (imported, through its module, or in its own module) becomes
  `Message.of("code", ...)` when called, `"code"` for `NAME.code`, else `text_of("code")`;
- imports of the names go; `ruff check --fix` (unused imports, their order) and `ruff format` run
  on the files changed.

What it cannot do, it lists at the end (a `Text(` inside a function, a module it cannot import,
a star import): those are for a hand. Delete this script and NAMES once every branch is merged.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

ROOT = Path(__file__).resolve().parent.parent
NAMES = Path(__file__).with_name("codemod_texts_names.json")  # (module, NAME) -> code, of every run
SELF = {Path(__file__).resolve(), NAMES}

sys.path.insert(0, str(ROOT))


def python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file() and (ROOT / name).resolve() not in SELF]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_text_call(node: ast.AST) -> TypeGuard[ast.Call]:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Text"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def module_level_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node evaluated when the module is imported (not inside a function, class or lambda)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda node: (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)))


@dataclass
class Edits:
    """Byte-offset replacements of one file, applied from the end."""

    source: bytes
    starts: list[int] = field(default_factory=list)
    changes: list[tuple[int, int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        offset = 0
        self.starts = [0]
        for line in self.source.splitlines(keepends=True):
            offset += len(line)
            self.starts.append(offset)

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.at(node.lineno, node.col_offset), self.at(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def replace(self, start: int, end: int, text: str) -> None:
        self.changes.append((start, end, text))

    def lines(self, first: int, last: int) -> None:
        """Remove whole lines first..last (1-based, inclusive)."""
        self.changes.append((self.starts[first - 1], self.starts[last], ""))

    def applied(self) -> bytes:
        out = self.source
        done: list[tuple[int, int]] = []
        for start, end, text in sorted(self.changes, key=lambda change: (change[0], change[1]), reverse=True):
            if any(start < d_end and d_start < end for d_start, d_end in done):
                continue  # (inside a span already replaced)
            out = out[:start] + text.encode() + out[end:]
            done.append((start, end))
        return out


@dataclass
class Run:
    dry: bool
    names: dict[str, str] = field(default_factory=dict)  # "module:NAME" -> code
    data: dict[Path, dict[str, Any]] = field(default_factory=dict)
    changed: set[Path] = field(default_factory=set)
    by_hand: list[str] = field(default_factory=list)
    converted: int = 0


def lenient_catalogue() -> Any:
    """catalogue with a second definition of a code allowed (a source declaration that changed an
    entry already in a texts.json: the source's wins)."""
    import catalogue

    strict = catalogue.Text.__post_init__

    def lenient(self: Any) -> None:
        try:
            strict(self)
        except ValueError as error:
            if "defined twice" not in str(error):
                raise
            catalogue._TEXTS[self.code] = self

    catalogue.Text.__post_init__ = lenient  # type: ignore[method-assign]
    return catalogue


def data_of(run: Run, path: Path) -> dict[str, Any]:
    target = path.parent / "texts.json"
    if target not in run.data:
        run.data[target] = json.loads(target.read_text()) if target.exists() else {}
    return run.data[target]


def declarations(run: Run, files: list[Path]) -> None:
    """Pass 1: every module-level Text(...) into its texts.json; the declaring modules rewritten."""
    catalogue = lenient_catalogue()
    for known in catalogue.data_files():  # (every data file at hand: a code's entry stays where it is)
        data_of(run, known)
    for path in files:
        source = path.read_bytes()
        if b"Text(" not in source:
            continue
        tree = ast.parse(source)
        calls: list[ast.Call] = [node for node in module_level_nodes(tree) if is_text_call(node)]
        inside = [node for node in ast.walk(tree) if is_text_call(node) and node not in calls]
        if path.relative_to(ROOT).parts[0] not in catalogue.PACKAGES:  # (tests' own codes, other folders)
            if calls and path.relative_to(ROOT).parts[0] != "tests":
                run.by_hand.append(f"{path.relative_to(ROOT)}: Text(...) outside catalogue.PACKAGES: left as is")
            continue
        for node in inside:
            run.by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}: Text(...) inside a function or class")
        if not calls:
            continue
        try:
            module = importlib.import_module(module_name(path))
        except Exception as error:
            run.by_hand.append(f"{path.relative_to(ROOT)}: cannot import it ({error!r}); its Text(...) stay")
            continue
        new = without_dangling_comments(converted(run, path, module, tree, source, calls))
        if is_empty(new):
            run.changed.add(path)
            run.by_hand.append(f"{path.relative_to(ROOT)}: held only texts: removed (its docstring with it)")
            if not run.dry:
                path.unlink()
            continue
        write(run, path, new, needs={"text_of"} if b"text_of(" in new else set())


def converted(run: Run, path: Path, module: Any, tree: ast.Module, source: bytes, calls: list[ast.Call]) -> bytes:
    """The module without its Text declarations (each into a texts.json), its nested Text(...) as
    text_of("code")."""
    import catalogue

    data = data_of(run, path)
    edits = Edits(source)
    statements = {id(stmt.value): stmt for stmt in tree.body if isinstance(stmt, ast.Assign)}
    comments_above = source.splitlines()
    for node in calls:
        text = eval(compile(ast.Expression(node), str(path), "eval"), vars(module))  # noqa: S307
        if not isinstance(text, catalogue.Text):
            run.by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}: Text(...) is not catalogue's Text")
            continue
        value = text.as_data()
        home = next((kept for kept in run.data.values() if text.code in kept), data)  # (a code has one home)
        if text.code in home and home[text.code] != value:
            print(f"  {text.code}: English changed in {path.relative_to(ROOT)}; the source's kept")
        home[text.code] = value
        run.converted += 1
        stmt = statements.get(id(node))
        if stmt is not None and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            run.names[f"{module.__name__}:{stmt.targets[0].id}"] = text.code
            first = stmt.lineno
            while first > 1 and comments_above[first - 2].lstrip().startswith(b"#"):
                first -= 1
            edits.lines(first, stmt.end_lineno or stmt.lineno)
        else:
            edits.replace(*edits.span(node), f'text_of("{text.code}")')
    return edits.applied()


def without_dangling_comments(source: bytes) -> bytes:
    """Without the comment blocks (section headings) left with nothing under them: a block of
    column-0 comments followed, after a blank line, by another such block or by the end."""
    lines = source.splitlines(keepends=True)
    blocks: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if lines[index].startswith(b"#"):
            end = index
            while end < len(lines) and lines[end].startswith(b"#"):
                end += 1
            blocks.append((index, end))
            index = end
        else:
            index += 1
    dropped: set[int] = set()
    for start, end in blocks:
        after = end
        while after < len(lines) and not lines[after].strip():
            after += 1
        if after == len(lines) or (after > end and lines[after].startswith(b"#")):
            dropped.update(range(start, end))
    return b"".join(line for number, line in enumerate(lines) if number not in dropped)


def is_empty(source: bytes) -> bool:
    """Only a docstring and `from __future__` imports left."""
    return all(
        (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
        or (isinstance(stmt, ast.ImportFrom) and stmt.module in ("__future__", "catalogue"))
        for stmt in ast.parse(source).body
    )


def write(run: Run, path: Path, new: bytes, needs: set[str]) -> None:
    if needs:
        new = with_imports(new, needs)
    if new != path.read_bytes():
        run.changed.add(path)
        if not run.dry:
            path.write_bytes(new)


def binds_otherwise(tree: ast.Module, name: str) -> bool:
    """Whether the module gives `name` a meaning of its own (not catalogue's)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module not in ("catalogue", "web.texts"):
            bound = [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound = [node.id]
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            bound = [node.name]
        elif isinstance(node, ast.arg):
            bound = [node.arg]
        else:
            continue
        if name in bound:
            return True
    return False


def with_imports(source: bytes, needs: set[str]) -> bytes:
    """`from catalogue import <needs>` after the module's docstring and __future__ import (ruff's
    isort fix merges it with any import of catalogue already there)."""
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module in ("catalogue", "web.texts")
        for alias in node.names
    }
    needs = {name for name in needs if name not in imported}
    if not needs:
        return source
    line = 0
    for stmt in tree.body:
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)) or (
            isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
        ):
            line = stmt.end_lineno or stmt.lineno
            continue
        break
    lines = source.splitlines(keepends=True)
    plain = sorted(name for name in needs if not name.startswith("catalogue."))
    added = f"from catalogue import {', '.join(plain)}\n".encode() if plain else b""
    if len(plain) < len(needs):
        added += b"import catalogue\n"
    return b"".join(lines[:line]) + added + b"".join(lines[line:])


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := dotted(node.value)) is not None:
        return f"{base}.{node.attr}"
    return None


def imported_names(
    run: Run, path: Path, tree: ast.Module, by_module: dict[str, dict[str, str]], edits: Edits
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The converted names a module imports (a name -> its code; their imports edited away) and
    the texts modules it imports (a dotted name -> its names)."""
    local: dict[str, str] = {}
    modules: dict[str, dict[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {
                alias.asname or alias.name: by_module[alias.name] for alias in node.names if alias.name in by_module
            }
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if any(alias.name == "*" for alias in node.names) and node.module in by_module:
            run.by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import *")
        names = by_module.get(node.module, {})
        kept = [alias for alias in node.names if alias.name not in names]
        local |= {alias.asname or alias.name: names[alias.name] for alias in node.names if alias.name in names}
        modules |= {
            alias.asname or alias.name: by_module[f"{node.module}.{alias.name}"]
            for alias in kept
            if f"{node.module}.{alias.name}" in by_module
        }
        if kept and len(kept) < len(node.names):
            listed = ", ".join(f"{a.name} as {a.asname}" if a.asname else a.name for a in kept)
            edits.replace(*edits.span(node), f"from {node.module} import {listed}")
        elif not kept:
            edits.lines(node.lineno, node.end_lineno or node.lineno)
    return local, modules


def reexports(run: Run, files: list[Path]) -> None:
    """A module that imports a converted name passes it on (`vc_rules.JOBS_NAME_IT`): its name too."""
    trees = {}
    for path in files:
        if path.exists() and b"import" in (source := path.read_bytes()):
            trees[module_name(path)] = ast.parse(source)
    for _chain in range(3):
        for module, tree in trees.items():
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        code = run.names.get(f"{node.module}:{alias.name}")
                        if code is not None:
                            run.names.setdefault(f"{module}:{alias.asname or alias.name}", code)


def uses(run: Run, files: list[Path]) -> None:
    """Pass 2: every use of a converted name names its code."""
    reexports(run, files)
    by_module: dict[str, dict[str, str]] = {}
    for key, named in run.names.items():
        module, name = key.split(":")
        by_module.setdefault(module, {})[name] = named
    for path in files:
        if not path.exists():
            continue  # (a texts module removed by pass 1)
        source = path.read_bytes()
        if not any(name.encode() in source for names in by_module.values() for name in names):
            continue
        tree = ast.parse(source)
        edits = Edits(source)
        local, modules = imported_names(run, path, tree, by_module, edits)
        local = {**by_module.get(module_name(path), {}), **local}
        if not local and not modules:
            continue
        parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        needs: set[str] = set()
        message_of = "catalogue.Message" if binds_otherwise(tree, "Message") else "Message"
        text_of = "catalogue.text_of" if binds_otherwise(tree, "text_of") else "text_of"
        for node in ast.walk(tree):
            code: str | None = None
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in local:
                code = local[node.id]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                base = dotted(node.value)
                if base in modules and node.attr in modules[base]:
                    code = modules[base][node.attr]
            if code is None:
                continue
            parent = parents.get(id(node))
            if isinstance(parent, ast.Call) and parent.func is node:
                start, end = edits.span(node)
                opening = source.index(b"(", end)
                edits.replace(start, end, f"{message_of}.of")
                more = ", " if parent.args or parent.keywords else ""
                edits.replace(opening + 1, opening + 1, f'"{code}"{more}')
                needs.add(message_of)
            elif isinstance(parent, ast.Attribute) and parent.attr == "code":
                edits.replace(*edits.span(parent), f'"{code}"')
            else:
                edits.replace(*edits.span(node), f'{text_of}("{code}")')
                needs.add(text_of)
            run.converted += 1
        write(run, path, edits.applied(), needs)


def main() -> None:
    dry = "--dry" in sys.argv[1:]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    import django

    django.setup()
    run = Run(dry=dry, names=json.loads(NAMES.read_text()) if NAMES.exists() else {})
    files = python_files()
    declarations(run, files)
    if not dry:
        for target, data in run.data.items():
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
        NAMES.write_text(json.dumps(dict(sorted(run.names.items())), indent=0) + "\n")
    uses(run, files)
    changed = [str(path) for path in sorted(run.changed) if path.exists()]
    if changed and not dry:
        ruff = str(ROOT / ".venv" / "bin" / "ruff")
        subprocess.run([ruff, "check", "--fix", "--select", "F401,I001", "--quiet", *changed], cwd=ROOT, check=False)
        subprocess.run([ruff, "format", "--quiet", *changed], cwd=ROOT, check=False)
    print(f"{run.converted} declarations and uses converted in {len(run.changed)} files", "(dry run)" if dry else "")
    for line in run.by_hand:
        print(f"by hand: {line}")


if __name__ == "__main__":
    main()
