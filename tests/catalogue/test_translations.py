"""Every code the project defines has its zh-Hans text, using exactly its parameters, and the
catalogue files are in step with the codes (so a message changed at its source cannot silently
lose its translation)."""

from __future__ import annotations

import io

import polib
import pytest
from django.core.management import call_command
from django.utils import translation

from catalogue import Message, Text, all_texts, placeholders
from web.management.commands.catalogue import catalogue_path
from web.texts import translated


@pytest.fixture(scope="module")
def codes() -> dict[str, Text]:
    return {code: text for code, text in all_texts().items() if not code.startswith("test.")}


def zh_hans() -> dict[str, polib.POEntry]:
    path = catalogue_path("zh-hans")
    return {entry.msgctxt: entry for entry in polib.pofile(str(path))} if path.exists() else {}


def forms(entry: polib.POEntry) -> list[str]:
    """The entry's translation: its msgstr, or each of its plural forms."""
    return list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]


def test_every_code_has_its_zh_hans_text_with_exactly_its_parameters(codes):
    entries = zh_hans()
    problems = []
    for code, text in sorted(codes.items()):
        entry = entries.get(code)
        english = (text.template, text.plural or "")
        if (
            entry is None
            or not all(forms(entry))
            or "fuzzy" in entry.flags
            or (entry.msgid, entry.msgid_plural) != english
        ):
            problems.append(f"{code}: no zh-Hans text for {text.template!r}")
            continue
        for said in forms(entry):
            if placeholders(said) != text.names:
                problems.append(f"{code}: zh-Hans uses {sorted(placeholders(said))}, English {sorted(text.names)}")
    assert problems == []


def test_the_catalogue_files_are_in_step_with_the_codes():
    call_command("catalogue", "--check", stdout=io.StringIO())


@pytest.mark.parametrize(("minutes", "english", "chinese"), [(1, "1 minute", "1 分钟"), (2, "2 minutes", "2 分钟")])
def test_a_count_reads_in_the_singular_for_one_in_english_and_in_zh_hans_one_form(minutes, english, chinese):
    message = Message.of("exit.stop.idle", app="jupyter", minutes=minutes)
    assert message.text == f"jupyter was idle for {english}"
    assert translated(message, "en") == message.text
    assert translated(message, "zh-hans") == f"jupyter 空闲 {chinese}"


def test_a_page_renders_a_code_in_the_readers_language(codes):
    entries = zh_hans()
    translated_codes = [code for code in codes if code in entries and entries[code].msgstr and not codes[code].names]
    if not translated_codes:
        pytest.skip("no code without parameters is defined yet")
    code = translated_codes[0]
    with translation.override("zh-hans"):
        assert translated(Message(code, {})) == entries[code].msgstr
    with translation.override("en"):
        assert translated(Message(code, {})) == codes[code].template
