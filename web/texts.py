"""Messages (catalogue.Message) in the reader's language: each code's template from the
catalogue's translations (`locale/<lang>/LC_MESSAGES/catalogue.mo`, msgctxt = the code), its
parameters rendered the same way. A code without a translation reads in English."""

from __future__ import annotations

import gettext
from collections.abc import Callable
from functools import cache
from typing import Any, cast

from django.conf import settings
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, to_locale

from catalogue import Message, Param, Text, english, render

DOMAIN = "catalogue"


@cache
def _translations(language: str) -> gettext.NullTranslations:
    return gettext.translation(
        DOMAIN, localedir=str(settings.LOCALE_PATHS[0]), languages=[to_locale(language)], fallback=True
    )


def template_in(language: str | None) -> Any:
    """`template_of` for catalogue.render: each code's template in `language` (for a count of n)."""
    if not language or language.startswith("en"):
        return english
    translations = _translations(language)

    def template_of(text: Text, n: int) -> str:
        if text.plural is None:
            return translations.pgettext(text.code, text.template)
        return translations.npgettext(text.code, text.template, text.plural, n)

    return template_of


def translated(message: Message, language: str | None = None) -> str:
    """The message in `language` (default: the active one, the reader's)."""
    return render(message, template_in(language or get_language()))


def translated_html(message: Message, shown: Callable[[str, Any], str] | None = None) -> SafeString:
    """The message in the reader's language as HTML: its template and every parameter escaped;
    `shown(name, value)`, where given, writes a parameter's HTML itself (a phrase as code)."""
    template_of = template_in(get_language())
    escaped = _escaped(message, shown)
    return mark_safe(render(escaped, lambda text, n: conditional_escape(template_of(text, n))))  # noqa: S308  (escaped)


def _escaped(message: Message, shown: Callable[[str, Any], str] | None) -> Message:
    def value(name: str, param: Param) -> Param:
        if isinstance(param, Message):
            return _escaped(param, shown)
        if isinstance(param, list):
            return cast(Param, [value(name, item) for item in param])
        return shown(name, param) if shown is not None else str(conditional_escape(str(param)))

    return Message(message.code, {name: value(name, param) for name, param in message.params.items()})


def message_of(stored: Any, english: str = "") -> Message | None:
    """A Message, or a stored {"code", "params"} as one; None when there is none (an old row: its English)."""
    if isinstance(stored, Message):
        return stored
    if isinstance(stored, dict) and stored.get("code"):
        return Message.from_dict(stored)
    return None


def shown(stored: Any, english: str) -> str:
    """What a page shows of a stored message: translated when it has a code, else as it was stored."""
    message = message_of(stored)
    return translated(message) if message is not None else english


__all__ = ["Message", "Text", "message_of", "shown", "template_in", "translated", "translated_html"]
