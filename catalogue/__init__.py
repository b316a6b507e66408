"""Messages as data: a code plus parameters, with the English template kept as data beside the code.

Every text a user reads that the portal composes (a config error, why a job waits, an exit's
diagnostics, an alert, a webhook's refusal) is a `Message`: a code such as `config.min` and its
parameters. Each area keeps its codes and English templates in a `texts.json` beside its modules
(`jobs/texts.json`, `jobs/protocol/texts.json`, ...), read here when a code is first looked up:

    "config.min": "must be >= %(value)s",
    "tag.too_long": {"text": "must be at most %(most)s character",
                     "plural": "must be at most %(most)s characters", "count": "most"},

and the code that says one names its code:

    raise JobConfigError([(path, Message.of("config.min", value=100))])

A text's options beside "text": "plural" (the English for any other count), "count" (the
parameter whose number chooses, default "count"), "join" (between the items of a list parameter,
default ", ") and "key" (what the text stands for in another's words, such as a Slurm reason
code: `table(prefix)` looks texts up by it). `tests/catalogue/test_codes_used.py` checks that
every code named in the source is defined and every code defined is named somewhere.

The API answers the code, the parameters and the English text; pages render the code's template
in the reader's language (`web.texts`), never by parsing the English back. A parameter may itself
be a Message (a word that is translated too) or a list of them (joined by the template's own
`join`). The catalogue's translations live in `locale/<lang>/LC_MESSAGES/catalogue.po` (gettext,
`msgctxt` = the code), kept in step by `manage.py catalogue`, and `tests/catalogue/` checks that
every code has its zh-Hans text using exactly its parameters.

Standard library only: the protocol, placement and the executors' supervisor import it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Union, cast

# %(name)s (or %(name)d ...): gettext's python-format, which msgfmt -c checks in every translation.
PLACEHOLDER = re.compile(r"%\((?P<name>[A-Za-z_][A-Za-z0-9_]*)\)[sdif]")
CODE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")

Param = Union[str, int, float, "Message", list["Message"], list[str]]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("catalogue", "accounts", "clusters", "jobs", "scheduling", "web")
DATA_NAME = "texts.json"  # an area's codes and English templates, beside its modules
OPTIONS = ("plural", "count", "join", "key")

_TEXTS: dict[str, Text] = {}
_LOADED: list[bool] = []  # (once the data files are read: at the first code looked up)


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
    key: str | None = None  # what it stands for in another's words (a Slurm reason code): `table`

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

    def as_data(self) -> str | dict[str, str]:
        """The text as its data file holds it: the template alone, or with its options."""
        options = {"plural": self.plural, "count": self.count if self.count != "count" else None}
        options["join"] = self.join if self.join != ", " else None
        options["key"] = self.key
        given = {name: value for name, value in options.items() if value is not None}
        return {"text": self.template, **given} if given else self.template

    @classmethod
    def from_data(cls, code: str, data: str | Mapping[str, str]) -> Text:
        if isinstance(data, str):
            return cls(code, data)
        unknown = set(data) - {"text", *OPTIONS}
        if unknown or "text" not in data:
            raise ValueError(f"message code {code!r}: a template, or {{'text', {', '.join(map(repr, OPTIONS))}}}")
        return cls(code, data["text"], **{name: data[name] for name in OPTIONS if name in data})

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
    def of(cls, code: str, /, **params: Param) -> Message:
        """The message of a defined code: exactly its template's parameters (else TypeError; an
        unknown code: KeyError)."""
        return text_of(code)(**params)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        return cls(str(data["code"]), {k: _param_from(v) for k, v in dict(data.get("params") or {}).items()})


def text_of(code: str) -> Text:
    try:
        return _defined()[code]
    except KeyError:
        raise KeyError(f"message code {code!r} is not in any {DATA_NAME}") from None


def all_texts() -> dict[str, Text]:
    """Every code defined."""
    return dict(_defined())


def texts_under(prefix: str) -> list[Text]:
    """The texts whose codes start with `prefix` (a table's codes: `config.yaml.`), in file order."""
    return [text for code, text in _defined().items() if code.startswith(prefix)]


def table(prefix: str) -> dict[str, Text]:
    """The texts under `prefix` that have a key, by their keys: another's words -> the portal's
    (Slurm's reason codes, a schema's type names), kept in the data beside the texts."""
    return {text.key: text for text in texts_under(prefix) if text.key is not None}


def data_files() -> list[Path]:
    """Each area's texts.json (at most three folders below a package)."""
    patterns = (DATA_NAME, f"*/{DATA_NAME}", f"*/*/{DATA_NAME}", f"*/*/*/{DATA_NAME}")
    return sorted(path for package in PACKAGES for pattern in patterns for path in (ROOT / package).glob(pattern))


def read_data(path: Path) -> dict[str, Text]:
    """A data file's texts, in its order (each checked as it is made: a code defined twice fails)."""
    data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_twice)
    try:
        return {code: Text.from_data(code, value) for code, value in data.items()}
    except ValueError as error:
        raise ValueError(f"{path.relative_to(ROOT)}: {error}") from None


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"message code {key!r} is defined twice")
        seen[key] = value
    return seen


def load() -> None:
    """Define every code of every data file."""
    for path in data_files():
        read_data(path)


def _defined() -> dict[str, Text]:
    """Every code, the data files read at the first call (an importer that never looks a code up,
    such as a task's supervisor that starts its command, never pays for reading them)."""
    if not _LOADED:
        _LOADED.append(True)
        load()
    return _TEXTS


def english(text: Text, n: int) -> str:
    """`template_of` for render: the English."""
    return text.english(n)


def render(message: Message, template_of: Any) -> str:
    """The message with `template_of(text, n) -> str` choosing each code's template (English, or a
    translation) for the count n (Text.number); nested messages rendered the same way. A code no
    longer defined, or parameters its template no longer takes (a row stored before a change),
    falls back to the English text stored beside it by the caller: here, the code and its
    parameters as they are."""
    text = (_TEXTS if _LOADED else _defined()).get(message.code)
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
