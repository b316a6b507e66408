"""Writes the generated reference pages of the documentation site from the code itself, so they
cannot drift from it (`make docs` runs this before `mkdocs build`; the pages are not committed):

- docs/reference/environment.md: every variable the settings read through pai_portal/env.py's
  readers (found in the settings' source), with the reader's type, minimum and default, and its
  description from docs/gen/environment.md. A variable read but not described, or described but no
  longer read, stops the build naming it.
- docs/reference/exit-codes.md: jobs/protocol/exit_spec.yaml.
- docs/reference/config-schema.md: the fields of jobs/protocol/schemas/v2.json and v1.json.
- docs/reference/commands.md: the `--help` of each of the project's management commands.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "reference"
READERS = {
    "env_str": "text",
    "env_bool": "on/off",
    "env_int": "whole number",
    "env_float": "number",
    "env_list": "comma-separated list",
    "env_choices": "comma-separated choices",
    "env_networks": "comma-separated addresses or networks",
    "env_path": "path",
}
# The options Django gives every command: left out of each page, said once above them.
DJANGO_OPTIONS = {
    "version",
    "verbosity",
    "settings",
    "pythonpath",
    "traceback",
    "no_color",
    "force_color",
    "skip_checks",
}
GENERATED = "<!-- Written by docs/gen/reference.py from {source}: edit that, not this page. -->\n\n"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- environment variables --------------------------------------------------------------------


def settings_readers(path: Path) -> dict[str, dict[str, str]]:
    """Each variable the settings read: its reader's kind, default (as written) and minimum."""
    source = path.read_text()
    lines = source.encode().splitlines(keepends=True)

    def segment(node: ast.expr) -> str:
        """The node's text as written (ast.get_source_segment splits the whole file at every call)."""
        assert node.end_lineno is not None and node.end_col_offset is not None
        text = b"".join(lines[node.lineno - 1 : node.end_lineno])
        end = len(text) - len(lines[node.end_lineno - 1]) + node.end_col_offset
        return text[node.col_offset : end].decode()

    found: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in READERS):
            continue
        if not (node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            continue
        default = segment(node.args[1]) if len(node.args) > 1 else ""
        minimum = next((segment(k.value) for k in node.keywords if k.arg == "minimum"), "")
        found.setdefault(
            node.args[0].value,
            {"kind": READERS[node.func.id], "default": default or "", "minimum": minimum or ""},
        )
    return found


def described(path: Path) -> tuple[str, dict[str, tuple[str, str]]]:
    """The descriptions' introduction, and each variable's (documented default, description) from
    docs/gen/environment.md's table, whose first cell may name several (`A` / `B`)."""
    intro, rows = [], {}
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            intro.append(line)
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        if not names or set(cells[0]) <= set("-| "):
            continue
        for name in names:
            rows[name] = (cells[1], cells[2])
    return "\n".join(intro).strip(), rows


def environment() -> str:
    read = settings_readers(ROOT / "pai_portal" / "settings.py")
    intro, rows = described(ROOT / "docs" / "gen" / "environment.md")
    undocumented = sorted(set(read) - set(rows))
    gone = sorted(set(rows) - set(read))
    if undocumented or gone:
        sys.exit(
            "docs/gen/environment.md is out of step with pai_portal/settings.py: "
            + "; ".join(
                part
                for part in (
                    f"read but not described: {', '.join(undocumented)}" if undocumented else "",
                    f"described but not read: {', '.join(gone)}" if gone else "",
                )
                if part
            )
        )
    lines = [
        "# Environment variables",
        "",
        GENERATED.format(source="pai_portal/settings.py and docs/gen/environment.md").strip(),
        "",
        intro,
        "",
        f"{len(read)} variables, in the order the settings read them. *Read as* is the reader in "
        "`pai_portal/env.py` the settings use, with the default and minimum as the code writes them.",
        "",
        "| variable | default | what it does | read as |",
        "|---|---|---|---|",
    ]
    for name, reader in read.items():
        default, text = rows[name]
        how = reader["kind"]
        if reader["default"]:
            how += f", default `{reader['default']}`"
        if reader["minimum"]:
            how += f", at least `{reader['minimum']}`"
        lines.append(f"| `{name}` | {default} | {text} | {cell(how)} |")
    return "\n".join(lines) + "\n"


# -- exit codes --------------------------------------------------------------------------------


def exit_codes() -> str:
    rows = yaml.safe_load((ROOT / "jobs" / "protocol" / "exit_spec.yaml").read_text())
    lines = [
        "# Exit codes",
        "",
        GENERATED.format(source="jobs/protocol/exit_spec.yaml").strip(),
        "",
        "Every exit a task or job can end with, as OpenPAI's exit spec has them (the same codes, "
        "phrases, types and reactions), plus the portal's own. **transient** exits are retried "
        "without counting against the job's retries, **permanent** ones never, **unknown** ones up "
        "to `taskRetryCount`. How a code is read from a task's log: "
        "[Why a job waits or failed](../user/why.md#why-it-failed-and-the-fix).",
        "",
        f"{len(rows)} codes.",
        "",
        "| code | phrase | type | retried | reason | what to do |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        solution = "; ".join(row.get("solution") or [])
        lines.append(
            f"| {row['code']} | `{row['phrase']}` | {row.get('type', '')} | {row.get('behaviour', '')} | "
            f"{cell(str(row.get('reason', '')))} | {cell(solution)} |"
        )
    return "\n".join(lines) + "\n"


# -- config schema -----------------------------------------------------------------------------


def schema_type(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return f"[{node['$ref'].rsplit('/', 1)[-1]}](#{node['$ref'].rsplit('/', 1)[-1].lower()})"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    for key in ("oneOf", "anyOf"):
        if key in node:
            return " or ".join(schema_type(option) for option in node[key])
    kind = node.get("type", "")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(node.get("items"), dict):
        return f"list of {schema_type(node['items'])}"
    bounds = [
        f"{word} {node[key]}"
        for key, word in (
            ("minimum", "≥"),
            ("maximum", "≤"),
            ("minLength", "length ≥"),
            ("maxLength", "length ≤"),
            ("minItems", "items ≥"),
        )
        if key in node
    ]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def schema_fields(node: dict[str, Any], prefix: str, required: set[str]) -> list[str]:
    lines = []
    for name, child in (node.get("properties") or {}).items():
        field = f"{prefix}{name}"
        mark = " (required)" if name in required else ""
        lines.append(f"| `{field}`{mark} | {cell(schema_type(child))} | {cell(child.get('description', ''))} |")
        if child.get("type") == "object" and "properties" in child:
            lines += schema_fields(child, field + ".", set(child.get("required", [])))
    return lines


def schema_page(path: Path, title: str) -> list[str]:
    schema = json.loads(path.read_text())
    lines = [f"## {title}", "", cell(schema.get("description", "")), ""]
    lines += ["| field | type | notes |", "|---|---|---|"]
    lines += schema_fields(schema, "", set(schema.get("required", [])))
    for name, node in (schema.get("$defs") or {}).items():
        lines += ["", f"### {name}", "", cell(node.get("description", "")), ""]
        if "properties" in node:
            lines += ["| field | type | notes |", "|---|---|---|"]
            lines += schema_fields(node, "", set(node.get("required", [])))
        else:
            lines.append(f"Type: {schema_type(node)}")
    return lines


def config_schema() -> str:
    schemas = ROOT / "jobs" / "protocol" / "schemas"
    lines = [
        "# Config schema",
        "",
        GENERATED.format(source="jobs/protocol/schemas/").strip(),
        "",
        "The JSON Schemas a config is checked against (the submit form and the API docs read the "
        "same files). The protocol's own checks go further (names, templates, limits): "
        "[Job configs](../user/configs.md).",
        "",
    ]
    lines += schema_page(schemas / "v2.json", "v2 (YAML)")
    lines += [""] + [line.replace("### ", "### v1 ", 1) for line in schema_page(schemas / "v1.json", "v1 (JSON)")]
    return "\n".join(lines) + "\n"


# -- management commands -----------------------------------------------------------------------


def commands() -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import get_commands, load_command_class

    django.setup()
    ours = sorted((name, app) for name, app in get_commands().items() if (ROOT / app.replace(".", "/")).is_dir())
    lines = [
        "# Management commands",
        "",
        GENERATED.format(source="each command's --help").strip(),
        "",
        "The portal's own commands, run as `.venv/bin/python manage.py <command>`. Django's "
        "(`migrate`, `createsuperuser`, `changepassword`...) are listed by `manage.py help`. Each "
        "also takes Django's common options (`--verbosity`, `--settings`, `--traceback`...), left out below.",
        "",
    ]
    for name, app in ours:
        command = load_command_class(app, name)
        parser = command.create_parser("manage.py", name)
        for action in parser._actions:
            if action.dest in DJANGO_OPTIONS:
                action.help = argparse.SUPPRESS
        help_text = parser.format_help()
        lines += [f"## {name}", "", f"From `{app}`.", "", "```text", help_text.rstrip(), "```", ""]
    return "\n".join(lines)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    pages = {
        "environment.md": environment,
        "exit-codes.md": exit_codes,
        "config-schema.md": config_schema,
        "commands.md": commands,
    }
    for name, make in pages.items():
        (OUT / name).write_text(make())
    print(f"docs/gen/reference.py: wrote {', '.join(pages)} in docs/reference/")


if __name__ == "__main__":
    main()
