"""The JSON Schemas are data files; the compiled fast check and jsonschema always agree."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from jobs.protocol.parsing import parse
from jobs.protocol.schema import fast_validator, schema, validator
from tests.conftest import examples
from tests.protocol.conftest import V1_CONFIG, V2_CONFIG, changed, example_files, example_ids
from tests.protocol.test_invalid_configs import V1_CASES, V1_LIST_CASES, V2_CASES


@pytest.mark.parametrize("version", [1, 2])
def test_the_schemas_are_valid_json_schemas(version: int) -> None:
    Draft202012Validator.check_schema(schema(version))


def _agree(version: int, doc: Any) -> None:
    fast = fast_validator(version)
    if fast is None:
        pytest.skip("jsonschema-rs is not installed")
    assert fast.is_valid(doc) == (not list(validator(version).iter_errors(doc)))


@pytest.mark.parametrize("path", example_files(), ids=example_ids(example_files()))
def test_fast_check_agrees_on_the_examples(path: Any) -> None:
    doc, _ = parse(path.read_text(encoding="utf-8"))
    _agree(2 if "protocolVersion" in doc else 1, doc)


@pytest.mark.parametrize(
    "changes", [c[1] for c in V1_CASES + V1_LIST_CASES], ids=[c[0] for c in V1_CASES + V1_LIST_CASES]
)
def test_fast_check_agrees_on_broken_v1_configs(changes: dict[str, Any]) -> None:
    _agree(1, changed(V1_CONFIG, changes))


@pytest.mark.parametrize("changes", [c[1] for c in V2_CASES], ids=[c[0] for c in V2_CASES])
def test_fast_check_agrees_on_broken_v2_configs(changes: dict[str, Any]) -> None:
    _agree(2, changed(V2_CONFIG, changes))


junk = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 300) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=examples(40), deadline=None)
@given(st.sampled_from(["jobName", "taskRoles", "name", "protocolVersion", "prerequisites", "extras"]), junk)
def test_fast_check_agrees_on_junk_values(key: str, value: Any) -> None:
    _agree(1, {**V1_CONFIG, key: value})
    _agree(2, {**V2_CONFIG, key: value})
