"""Keep each language's catalogue.po in step with the codes the project defines.

    manage.py catalogue            writes locale/<lang>/LC_MESSAGES/catalogue.po and .mo
    manage.py catalogue --check    changes nothing; fails while a file is out of step (CI)

An entry is msgctxt = the code, msgid = its English template (a text with a plural: msgid_plural
too, and as many msgstr forms as the language's Plural-Forms, taken from its django.po). A new code
is added untranslated; a code whose English changed keeps its old translation marked fuzzy (to be
looked at), which the pages do not use; a code no longer defined is dropped. A new entry whose English the portal's own
django.po already translates starts from that translation (marked fuzzy all the same)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import polib
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import to_locale

from catalogue import Text, all_texts
from web.texts import DOMAIN


def catalogue_path(language: str) -> Path:
    return Path(settings.LOCALE_PATHS[0]) / to_locale(language) / "LC_MESSAGES" / f"{DOMAIN}.po"


def updated(language: str) -> polib.POFile:
    """The language's catalogue as it should be, from the file as it is and the codes defined."""
    path = catalogue_path(language)
    old = polib.pofile(str(path)) if path.exists() else polib.POFile()
    known = {entry.msgctxt: entry for entry in old}
    django_po = path.with_name("django.po")
    portal = polib.pofile(str(django_po)) if django_po.exists() else polib.POFile()
    seeds = {e.msgid: e.msgstr for e in portal if e.msgstr}
    new = polib.POFile(wrapwidth=0)
    new.metadata = old.metadata or {
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Language": to_locale(language),
    }
    if "Plural-Forms" not in new.metadata and "Plural-Forms" in portal.metadata:
        new.metadata["Plural-Forms"] = portal.metadata["Plural-Forms"]
    counted = re.search(r"nplurals\s*=\s*(\d+)", new.metadata.get("Plural-Forms", ""))
    forms = int(counted[1]) if counted else 2  # (gettext's default: English's two)
    for code, text in sorted(all_texts().items()):
        new.append(_entry(code, text, known.get(code), seeds, forms))
    return new


def _entry(code: str, text: Text, was: Any, seeds: dict[str, str], forms: int) -> polib.POEntry:
    """The code's entry: its translation kept while its English is the same, kept fuzzy (to be
    looked at) when the English changed, else seeded from the portal's django.po (fuzzy too)."""
    entry = polib.POEntry(msgctxt=code, msgid=text.template, flags=["python-format"] if text.names else [])
    if text.plural is not None:
        entry.msgid_plural = text.plural
        entry.msgstr_plural = {form: "" for form in range(forms)}
    said = [was.msgstr] if was is not None and was.msgstr else list((was.msgstr_plural if was else {}).values())
    if was is not None and (was.msgid, was.msgid_plural or None) == (text.template, text.plural):
        entry.msgstr, entry.msgstr_plural, entry.flags = was.msgstr, was.msgstr_plural, was.flags
    elif any(said):
        _translate(entry, said)
        entry.previous_msgid = was.msgid
        entry.flags.append("fuzzy")
    elif text.template in seeds:
        _translate(entry, [seeds[text.template]])
        entry.flags.append("fuzzy")
    return entry


def _translate(entry: polib.POEntry, said: list[str]) -> None:
    """The entry's msgstr (or each plural form) from what was said: a form each, the last repeated."""
    if entry.msgid_plural:
        entry.msgstr_plural = {form: said[min(form, len(said) - 1)] for form in entry.msgstr_plural}
    else:
        entry.msgstr = said[0]


class Command(BaseCommand):
    help = "Write (or --check) each language's catalogue.po/.mo from the message codes the project defines."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="change nothing; fail while a file is out of step")

    def handle(self, *args, **options):
        stale = []
        for language, _name in settings.LANGUAGES:
            if language.startswith("en"):
                continue
            path = catalogue_path(language)
            po = updated(language)
            text = str(po)
            if options["check"]:
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path))
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            po.save_as_mofile(str(path.with_suffix(".mo")))
            untranslated = len(po.untranslated_entries()) + len(po.fuzzy_entries())
            self.stdout.write(f"{path}: {len(po)} codes, {untranslated} to translate")
        if stale:
            sys.stderr.write("out of step (run manage.py catalogue):\n  " + "\n  ".join(stale) + "\n")
            raise CommandError("the catalogue's translations are out of step with its codes")
