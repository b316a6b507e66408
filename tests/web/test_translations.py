"""Every string of the portal has its Simplified Chinese translation, compiled."""

import gettext
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import require

LOCALE = Path(__file__).resolve().parents[2] / "locale" / "zh_Hans" / "LC_MESSAGES"


def po_entries() -> list[tuple[str, str]]:
    """(msgid, msgstr or msgstr[0]) for every entry but the header."""
    entries = []
    for block in LOCALE.joinpath("django.po").read_text(encoding="utf-8").split("\n\n"):
        fields: dict[str, str] = {}
        current = None
        for line in block.splitlines():
            match = re.match(r'^(msgid|msgstr(?:\[0\])?) "(.*)"$', line)
            if match:
                current = match.group(1).replace("[0]", "")
                fields[current] = match.group(2)
            elif line.startswith('"') and current:
                fields[current] += line[1:-1]
        if fields.get("msgid"):
            entries.append((fields["msgid"], fields.get("msgstr", "")))
    return entries


def test_every_message_has_a_chinese_translation():
    untranslated = [msgid for msgid, msgstr in po_entries() if not msgstr]
    assert untranslated == []


def test_the_compiled_catalog_holds_every_translation():
    with LOCALE.joinpath("django.mo").open("rb") as compiled:
        catalog = gettext.GNUTranslations(compiled)
    po = LOCALE.joinpath("django.po").read_text(encoding="utf-8")
    contexts = {msgid: context for context, msgid in re.findall(r'^msgctxt "(.*)"\nmsgid "(.*)"$', po, re.M)}

    def translated(msgid: str) -> str:
        return catalog.pgettext(contexts[msgid], msgid) if msgid in contexts else catalog.gettext(msgid)

    missing = [msgid for msgid, _msgstr in po_entries() if "%" not in msgid and translated(msgid) == msgid]
    assert [
        m
        for m in missing
        if m
        not in ("IP", "SSH", "API", "TensorBoard", "Jupyter", "URL", "CPU", "GPU", "Docker URL", "InfiniBand")  # names
    ] == []


def test_msgfmt_counts_no_untranslated_or_fuzzy_message():
    require(shutil.which("msgfmt") is not None, "msgfmt (apt-get install gettext)")
    result = subprocess.run(
        ["msgfmt", "--statistics", "-o", "/dev/null", str(LOCALE / "django.po")],
        capture_output=True,
        text=True,
        check=True,
    )
    statistics = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ translated messages\.", statistics), statistics


# Fields the admin never shows (secrets, the raw spec and config: shown masked by methods of their own).
NEVER_SHOWN = {"config_text", "spec", "secrets_encrypted", "ssh_private_key_encrypted", "params"}
NEVER_SHOWN |= {"pending_reason_messages", "down_reason_messages"}  # (a reason's parts: shown as the reason)
NEVER_SHOWN |= {"exit_diagnostics_message", "ending_reason_message"}  # (shown as the diagnostics, the reason)


def test_every_field_the_admin_shows_has_a_translatable_name():
    from django.contrib import admin
    from django.utils.functional import Promise

    unnamed = [
        f"{model._meta.label}.{field.name}"
        for model in admin.site._registry
        if model._meta.app_label in ("accounts", "clusters", "jobs", "scheduling")
        for field in model._meta.get_fields()
        if (field.concrete or (field.many_to_many and not field.auto_created))
        and field.name not in NEVER_SHOWN | {"id"}
        and not isinstance(getattr(field, "verbose_name", None), Promise)
    ]
    assert unnamed == []  # name it in the app's admin.py (accounts.admin_labels.label)
