"""A message is a code plus parameters; its English template sits beside the code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import catalogue
from catalogue import Message, Text


@pytest.fixture
def texts() -> Iterator[dict[str, Text]]:
    """Codes of this test's own, gone afterwards (the catalogue checks every defined code)."""
    before = catalogue.all_texts()  # (the data files read first)
    made = {
        "min": Text("test.min", "must be >= %(value)s"),
        "word": Text("test.word", "an integer"),
        "type": Text("test.type", "must be %(types)s", join=" or "),
        "plain": Text("test.plain", "the config is empty"),
        "minutes": Text("test.minutes", "idle for %(n)s minute", plural="idle for %(n)s minutes", count="n"),
    }
    yield made
    catalogue._TEXTS.clear()
    catalogue._TEXTS.update(before)


def test_it_says_a_message_in_english_from_its_template(texts):
    assert texts["min"](value=100).text == "must be >= 100"


def test_it_renders_nested_messages_and_lists_of_them(texts):
    message = texts["type"](types=[texts["word"](), texts["plain"]()])
    assert message.text == "must be an integer or the config is empty"


@pytest.mark.parametrize(
    ("n", "english"), [(1, "1 minute"), ("1", "1 minute"), (0, "0 minutes"), (2, "2 minutes"), (1.5, "1.5 minutes")]
)
def test_it_says_a_count_of_one_in_the_singular_and_any_other_in_the_plural(texts, n, english):
    assert texts["minutes"](n=n).text == f"idle for {english}"


def test_it_refuses_a_plural_that_takes_other_parameters_or_no_count():
    with pytest.raises(ValueError, match="same parameters"):
        Text("test.bad_plural", "%(n)s task", plural="%(n)s tasks on %(node)s", count="n")
    with pytest.raises(ValueError, match="same parameters"):
        Text("test.no_count", "%(n)s task", plural="%(n)s tasks")


def test_it_refuses_parameters_its_template_does_not_take(texts):
    with pytest.raises(TypeError, match=r"test\.min"):
        texts["min"](value=1, other=2)
    with pytest.raises(TypeError):
        texts["min"]()


def test_it_refuses_a_code_defined_twice_with_another_template(texts):
    with pytest.raises(ValueError, match="defined twice"):
        Text("test.min", "must be at least %(value)s")


def test_it_refuses_a_code_that_is_not_dotted_lowercase_words():
    with pytest.raises(ValueError):
        Text("NoDots", "x")


def test_it_answers_code_params_and_english_and_reads_them_back(texts):
    message = texts["type"](types=[texts["word"]()])
    data = message.as_dict()
    assert data == {
        "code": "test.type",
        "params": {"types": [{"code": "test.word", "params": {}}]},
        "message": "must be an integer",
    }
    assert Message.from_dict(data) == message


def test_it_renders_a_stored_message_whose_template_lost_a_parameter_without_failing(texts):
    stored = Message("test.plain", {"gone": 3})
    assert stored.text == "the config is empty"


def test_it_renders_a_stored_message_of_an_unknown_code_as_its_code_and_params():
    assert Message("gone.code", {"n": 1}).text == "gone.code {'n': 1}"
