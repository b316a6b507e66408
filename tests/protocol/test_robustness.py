"""Whatever the input, load() answers a spec or a JobConfigError: never another exception."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.protocol import JobConfigError, export, load
from jobs.protocol.parsing import parse
from tests.conftest import examples
from tests.protocol.conftest import example_files

EXAMPLES = [parse(path.read_text(encoding="utf-8"))[0] for path in example_files()]

junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["<% $parameters.x %>", "<% $secrets.y %>", "<% $data.uri[3] %>", "img"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    copy = list(doc)
    copy[head] = _replace(doc[head], rest, value)
    return copy


@st.composite
def damaged_configs(draw: st.DrawFn) -> str:
    doc = draw(st.sampled_from(EXAMPLES))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        doc = _replace(doc, path, draw(junk))
    return json.dumps(doc) if draw(st.booleans()) else yaml.safe_dump(doc, allow_unicode=True)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_configs())
def test_damaged_configs_get_a_spec_or_field_errors(text: str) -> None:
    try:
        config = load(text)
    except JobConfigError as error:
        assert error.errors
        assert all(isinstance(field, str) and message for field, message in error.errors)
    else:
        assert load(export(config.spec)).spec == config.spec


@settings(max_examples=examples(80), deadline=None)
@given(st.text(alphabet='{}[]:,"-? \n\t#/abc0123&*!|>', max_size=200))
def test_random_text_gets_a_spec_or_an_error(text: str) -> None:
    with contextlib.suppress(JobConfigError):
        load(text)
