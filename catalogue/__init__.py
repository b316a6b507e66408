"""Messages as data: a code plus parameters, with the English template beside the code.

Every text a user reads that the portal composes (a config error, why a job waits, an exit's
diagnostics, an alert, a webhook's refusal) is a `Message`: a code such as `config.min` and its
parameters. The module that says it defines the code and its English template in one place:

    MUST_BE_AT_LEAST = Text("config.min", "must be >= %(value)s")
    ...
    raise JobConfigError([(path, MUST_BE_AT_LEAST(value=100))])

The API answers the code, the parameters and the English text; pages render the code's template
in the reader's language (`web.texts`), never by parsing the English back. A parameter may itself
be a Message (a word that is translated too) or a list of them (joined by the template's own
`join`). The catalogue's translations live in `locale/<lang>/LC_MESSAGES/catalogue.po` (gettext,
`msgctxt` = the code), kept in step by `manage.py catalogue`, and `tests/catalogue/` checks that
every code has its zh-Hans text using exactly its parameters.

Standard library only: the protocol, placement and the executors' supervisor import it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union, cast

# %(name)s (or %(name)d ...): gettext's python-format, which msgfmt -c checks in every translation.
PLACEHOLDER = re.compile(r"%\((?P<name>[A-Za-z_][A-Za-z0-9_]*)\)[sdif]")
CODE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")

Param = Union[str, int, float, "Message", list["Message"], list[str]]

_TEXTS: dict[str, Text] = {}


def placeholders(template: str) -> set[str]:
    return {match["name"] for match in PLACEHOLDER.finditer(template)}


@dataclass(frozen=True)
class Text:
    """A message's code and its English template; calling it with the template's parameters
    makes the Message. Defined once per code (a second definition of a code is an error)."""

    code: str
    template: str  # (with a plural: the English for a count of one, gettext's msgid)
    join: str = ", "  # between the items of a list parameter
    plural: str | None = None  # the English for any other count (msgid_plural)
    count: str = "count"  # the parameter whose number chooses between them

    def __post_init__(self) -> None:
        if not CODE.match(self.code):
            raise ValueError(f"message code {self.code!r}: lowercase dotted words (area.what)")
        if self.plural is not None and (self.count not in self.names or placeholders(self.plural) != self.names):
            raise ValueError(f"message code {self.code!r}: both forms take the same parameters, {self.count!r} too")
        known = _TEXTS.setdefault(self.code, self)
        if known is not self and known != self:
            raise ValueError(f"message code {self.code!r} is defined twice")

    @cached_property  # (asked at each call: a scheduler pass makes thousands of reasons)
    def names(self) -> set[str]:
        return placeholders(self.template)

    def number(self, params: Mapping[str, Param]) -> int:
        """The count that chooses the form (gettext's n); 1 for a text without a plural. A fraction
        counts as many ("1.5 minutes")."""
        if self.plural is None:
            return 1
        try:
            value = float(str(params.get(self.count)))
        except ValueError:
            return 0
        return int(value) if value.is_integer() else 2

    def english(self, n: int) -> str:
        """The English template for a count of n."""
        return self.template if self.plural is None or n == 1 else self.plural

    def __call__(self, **params: Param) -> Message:
        if set(params) != self.names:
            raise TypeError(f"{self.code}: give exactly {sorted(self.names)}, not {sorted(params)}")
        return Message(self.code, params)


@dataclass(frozen=True)
class Message:
    code: str
    params: Mapping[str, Param] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """In English, as the API, the logs and the commands say it."""
        return render(self, english)

    def __str__(self) -> str:
        return self.text

    def as_dict(self) -> dict[str, Any]:
        """JSON: {"code", "params", "message"} (nested messages as such dicts too)."""
        return {"code": self.code, "params": {k: _param_dict(v) for k, v in self.params.items()}, "message": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        return cls(str(data["code"]), {k: _param_from(v) for k, v in dict(data.get("params") or {}).items()})


def text_of(code: str) -> Text:
    return _TEXTS[code]


def all_texts() -> dict[str, Text]:
    """Every code defined by the modules imported so far (tests import them all first)."""
    return dict(_TEXTS)


def english(text: Text, n: int) -> str:
    """`template_of` for render: the English."""
    return text.english(n)


def render(message: Message, template_of: Any) -> str:
    """The message with `template_of(text, n) -> str` choosing each code's template (English, or a
    translation) for the count n (Text.number); nested messages rendered the same way. A code no
    longer defined, or parameters its template no longer takes (a row stored before a change),
    falls back to the English text stored beside it by the caller: here, the code and its
    parameters as they are."""
    text = _TEXTS.get(message.code)
    if text is None:
        return f"{message.code} {dict(message.params)}"
    values = {name: _render_param(value, text, template_of) for name, value in message.params.items()}
    n = text.number(message.params)
    try:
        return str(template_of(text, n)) % values
    except (KeyError, ValueError, TypeError):
        return text.english(n) % values if text.names <= set(values) else f"{message.code} {dict(message.params)}"


def _render_param(value: Param, text: Text, template_of: Any) -> str:
    if isinstance(value, Message):
        return render(value, template_of)
    if isinstance(value, list):
        return text.join.join(_render_param(item, text, template_of) for item in value)
    return str(value)


def _param_dict(value: Param) -> Any:
    if isinstance(value, Message):
        return {"code": value.code, "params": {k: _param_dict(v) for k, v in value.params.items()}}
    if isinstance(value, list):
        return [_param_dict(item) for item in value]
    return value


def _param_from(value: Any) -> Param:
    if isinstance(value, dict) and "code" in value:
        return Message.from_dict(value)
    if isinstance(value, list):
        return cast(Param, [_param_from(item) for item in value])
    return cast(Param, value)


def joined(messages: Iterable[Message], separator: str = "; ") -> str:
    """Several messages as one English line (a reason of several parts)."""
    return separator.join(message.text for message in messages)
