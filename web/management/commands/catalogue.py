"""Keep each language's catalogue.po in step with the codes the project defines.

    manage.py catalogue            writes locale/<lang>/LC_MESSAGES/catalogue.po and .mo
    manage.py catalogue --check    changes nothing; fails while a file is out of step (CI)

An entry is msgctxt = the code, msgid = its English template. A new code is added untranslated;
a code whose English changed keeps its old translation marked fuzzy (to be looked at), which the
pages do not use; a code no longer defined is dropped. A new entry whose English the portal's own
django.po already translates starts from that translation (marked fuzzy all the same)."""

from __future__ import annotations

import sys
from pathlib import Path

import polib
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import to_locale

from catalogue import all_texts
from catalogue.discover import import_all_texts
from web.texts import DOMAIN


def catalogue_path(language: str) -> Path:
    return Path(settings.LOCALE_PATHS[0]) / to_locale(language) / "LC_MESSAGES" / f"{DOMAIN}.po"


def updated(language: str) -> polib.POFile:
    """The language's catalogue as it should be, from the file as it is and the codes defined."""
    import_all_texts()
    path = catalogue_path(language)
    old = polib.pofile(str(path)) if path.exists() else polib.POFile()
    known = {entry.msgctxt: entry for entry in old}
    django_po = path.with_name("django.po")
    seeds = {e.msgid: e.msgstr for e in polib.pofile(str(django_po)) if e.msgstr} if django_po.exists() else {}
    new = polib.POFile(wrapwidth=0)
    new.metadata = old.metadata or {
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Language": to_locale(language),
    }
    for code, text in sorted(all_texts().items()):
        entry = polib.POEntry(msgctxt=code, msgid=text.template, flags=["python-format"] if text.names else [])
        was = known.get(code)
        if was is not None and was.msgid == text.template:
            entry.msgstr, entry.flags = was.msgstr, was.flags
        elif was is not None and was.msgstr:
            entry.msgstr, entry.previous_msgid = was.msgstr, was.msgid
            entry.flags.append("fuzzy")
        elif text.template in seeds:
            entry.msgstr = seeds[text.template]
            entry.flags.append("fuzzy")
        new.append(entry)
    return new


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
