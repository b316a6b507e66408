"""docs/contracts.md's normalized spec and jobs.protocol.spec's TypedDicts list the same keys, so
neither can drift from the other (`key?` in the doc: a NotRequired key)."""

import re
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints, is_typeddict

import yaml

from jobs.protocol import load
from jobs.protocol.spec import NormalizedSpec, TaskRoleSpec
from tests.factories import v1_json, v2_yaml

CONTRACTS = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"


def documented_spec() -> dict[str, Any]:
    text = CONTRACTS.read_text()
    block = re.search(r"tests/protocol/test_spec_types\.py.*?```yaml\n(.*?)```", text, re.S)
    assert block, "docs/contracts.md has no normalized spec block"
    return yaml.safe_load(block.group(1))


def differences(typed: Any, documented: Any, where: str) -> list[str]:
    """Where the doc and the TypedDict `typed` (met at `where`) disagree, walking nested TypedDicts
    (a `<role>` key documents a dict[str, TypedDict]; a one-item list, a list of them)."""
    if not isinstance(documented, dict):
        return [f"{where}: the doc shows no keys for {typed.__name__}"]
    keys = {key.rstrip("?"): value for key, value in documented.items()}
    optional = {key.rstrip("?") for key in documented if key.endswith("?")}
    found = [f"{where}.{key}: in the doc, not in {typed.__name__}" for key in keys.keys() - typed.__annotations__]
    found += [f"{where}.{key}: in {typed.__name__}, not in the doc" for key in typed.__annotations__.keys() - keys]
    if typed.__required_keys__:  # an all-optional TypedDict (total=False throughout) marks nothing
        found += [f"{where}.{key}: `?` in one, not the other" for key in optional ^ typed.__optional_keys__]
    for key, hint in get_type_hints(typed).items():
        if key in keys:
            found += nested_differences(hint, keys[key], f"{where}.{key}")
    return found


def nested_differences(hint: Any, documented: Any, where: str) -> list[str]:
    if is_typeddict(hint):
        return differences(hint, documented, where)
    origin, args = get_origin(hint), get_args(hint)
    if origin is dict and is_typeddict(args[1]):
        if not (isinstance(documented, dict) and len(documented) == 1 and str(next(iter(documented))).startswith("<")):
            return [f"{where}: the doc should show one `<name>: ...` entry"]
        return differences(args[1], next(iter(documented.values())), f"{where}.<name>")
    if origin is list and is_typeddict(args[0]):
        if not (isinstance(documented, list) and len(documented) == 1):
            return [f"{where}: the doc should show a list of one example"]
        return differences(args[0], documented[0], f"{where}[]")
    return []


def test_it_lists_the_same_keys_in_the_doc_and_the_typeddicts():
    assert differences(NormalizedSpec, documented_spec(), "spec") == []


def test_it_loads_specs_whose_keys_the_typeddicts_name():
    """What load() writes has no key the types leave out, for a v1 and a v2 config."""
    for text in (v1_json("one"), v2_yaml("two")):
        spec = load(text).spec
        assert set(spec) <= NormalizedSpec.__annotations__.keys()
        for role in spec["taskRoles"].values():
            assert set(role) <= TaskRoleSpec.__annotations__.keys()
