"""Text -> document: size guard, v1 JSON (with `//` comments and trailing commas) or v2 YAML,
syntax errors with line and column, and guards against hostile nesting.

Decision on pasted JSON: the guides' JSON examples carry `//` line comments, so a document whose
first character is `{` is read as JSON after removing `//` comments (outside strings, so
"hdfs://host/path" survives) and trailing commas. Everything else is read as YAML.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

import yaml

from catalogue import Message
from jobs.protocol import texts
from jobs.protocol.errors import JobConfigError, field_path
from jobs.protocol.limits import check_spec_size

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64  # levels of mappings/lists; real configs use fewer than 10
MAX_NODES = 200_000  # values after YAML aliases are expanded
# Whole numbers a database column or a JSON reader elsewhere can hold (64-bit signed).
MAX_INTEGER = 2**63 - 1
# libyaml's composer recurses in C: it must never see more nesting than this.
MAX_FLOW_NESTING = 200

_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')
_STRING_OR_TRAILING_COMMA = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(?=\s*[\]}])')
_TRAILING_COMMA_HINT = re.compile(r",\s*[\]}]")
_LEADING_COMMENTS = re.compile(r"\A(?:\s|//[^\n]*)*")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}
_COMPACT_NESTING = re.compile(rf"(?:[-?][ \t]+){{{MAX_FLOW_NESTING}}}")


def decode(data: str | bytes) -> str:
    """The text of a submitted body; size and encoding are checked before anything is parsed."""
    if len(data) > MAX_BYTES:
        raise too_big_error(len(data))
    if isinstance(data, str):
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise JobConfigError([("", Message.of("config.not_utf8_character", position=exc.start + 1))]) from None
        if size > MAX_BYTES:
            raise too_big_error(size)
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise JobConfigError([("", Message.of("config.not_utf8_byte", position=exc.start + 1))]) from None


def too_big_error(size: int) -> JobConfigError:
    limit = MAX_BYTES // 1024 // 1024
    return JobConfigError([("", Message.of("config.too_big", size=f"{size / 1024 / 1024:.1f}", limit=limit))])


def looks_like_json(text: str) -> bool:
    match = _LEADING_COMMENTS.match(text)
    rest = text[match.end() :] if match else text
    return rest.startswith("{")


def parse(data: str | bytes) -> tuple[dict[str, Any], bool]:
    """(the config as plain JSON-compatible data, whether it was JSON); raises JobConfigError
    for anything unreadable."""
    text = decode(data)
    if not text.strip():
        raise JobConfigError([("", Message.of("config.empty"))])
    _check_nesting(text)
    is_json = looks_like_json(text)
    try:
        doc = _parse_json(text) if is_json else _parse_yaml(text)
    except RecursionError:
        raise JobConfigError([("", Message.of("config.too_deep", levels=MAX_DEPTH))]) from None
    except ValueError as exc:  # the syntax errors are caught above: this is an integer over Python's limit
        raise JobConfigError([("", Message.of("config.number_too_long", detail=str(exc)))]) from None
    if doc is None:
        raise JobConfigError([("", Message.of("config.empty"))])
    if not isinstance(doc, dict):
        raise JobConfigError([("", Message.of("config.not_a_mapping"))])
    check_tree(doc)
    check_spec_size(doc)
    return doc, is_json


def compose_nodes(text: str) -> yaml.Node | None:
    """The YAML node tree of a config (line numbers for error reports), or None when the text is
    too big, too deep or not YAML. Never raises, never recurses without bound."""
    try:
        text = decode(text)
        _check_nesting(text)
        return yaml.compose(strip_json_comments(text) if looks_like_json(text) else text, Loader=_Composer)
    except (JobConfigError, yaml.YAMLError, RecursionError):
        return None


def strip_json_comments(text: str) -> str:
    """Remove `//` line comments and trailing commas outside strings; lines and columns are kept."""
    if "//" in text:
        text = _STRING_OR_COMMENT.sub(lambda m: m.group() if m.group().startswith('"') else "", text)
    if not _TRAILING_COMMA_HINT.search(text):
        return text
    return _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group() if m.group().startswith('"') else " ", text)


def _parse_json(text: str) -> Any:
    try:
        return json.loads(strip_json_comments(text), object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise JobConfigError(
            [("", Message.of("config.json_syntax", line=exc.lineno, column=exc.colno, problem=_json_words(exc.msg)))],
            line=exc.lineno,
            column=exc.colno,
        ) from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JobConfigError([("", Message.of("config.json_duplicate_key", key=key))])
            seen.add(key)
    return result


_PLAIN_SCALAR_TAGS: dict[str, str] = {}  # plain scalar -> resolved tag; configs repeat their words


class _Composer(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """libyaml builds the node tree; timestamps are not resolved (values stay JSON strings)."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is not yaml.ScalarNode or not implicit[0]:
            return super().resolve(kind, value, implicit)
        tag = _PLAIN_SCALAR_TAGS.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(_PLAIN_SCALAR_TAGS) < 10_000:
                _PLAIN_SCALAR_TAGS[value] = tag
        return tag


_Composer.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_SCALARS = yaml.SafeLoader("")  # only its scalar constructors are used (ints like 0x1F, floats like .inf)
_TAG = "tag:yaml.org,2002:"


def _parse_yaml(text: str) -> Any:
    try:
        node = yaml.compose(text, Loader=_Composer)  # composes nodes only; _construct builds plain data
        return None if node is None else _construct(node, {})
    except yaml.MarkedYAMLError as exc:
        raise _yaml_syntax_error(exc) from None
    except yaml.YAMLError as exc:
        raise JobConfigError([("", Message.of("config.yaml_error", detail=str(exc)))]) from None


def _construct(node: yaml.Node, memo: dict[int, Any]) -> Any:
    """Plain data from a node tree: safe tags only, duplicate keys refused, merge keys (<<)
    honoured, an alias built once (so aliases cannot blow up memory)."""
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, yaml.ScalarNode):
        return _construct_scalar(node)
    if isinstance(node, yaml.SequenceNode) and node.tag == _TAG + "seq":
        items: list[Any] = []
        memo[id(node)] = items
        items.extend(_construct(child, memo) for child in node.value)
        return items
    if isinstance(node, yaml.MappingNode) and node.tag == _TAG + "map":
        return _construct_mapping(node, memo)
    raise _Refused(Message.of("config.yaml.unsupported_tag", tag=node.tag), node)


_SCALAR_CONSTRUCTORS: dict[str, Callable[[yaml.ScalarNode], Any]] = {
    _TAG + "int": _SCALARS.construct_yaml_int,
    _TAG + "float": _SCALARS.construct_yaml_float,
    _TAG + "bool": _SCALARS.construct_yaml_bool,
    _TAG + "null": lambda _node: None,
}


def _construct_scalar(node: yaml.ScalarNode) -> Any:
    if node.tag == _TAG + "str":  # most scalars of a config: no lookup
        return node.value
    construct = _SCALAR_CONSTRUCTORS.get(node.tag)
    if construct is None:
        raise _Refused(Message.of("config.yaml.unsupported_tag", tag=node.tag), node)
    return construct(node)


def _construct_mapping(node: yaml.MappingNode, memo: dict[int, Any]) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    memo[id(node)] = mapping
    merges: list[yaml.Node] = []
    for key_node, value_node in node.value:
        if key_node.tag == _TAG + "merge":
            merges.extend(value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node])
            continue
        key = _construct(key_node, memo)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise _Refused(Message.of("config.yaml.key_not_scalar"), key_node)
        if key in mapping:
            raise _Refused(Message.of("config.yaml.duplicate_key", key=str(key)), key_node)
        mapping[key] = _construct(value_node, memo)
    _merge_into(mapping, merges, memo)
    return mapping


def _merge_into(mapping: dict[Any, Any], merges: list[yaml.Node], memo: dict[int, Any]) -> None:
    """Merge keys (<<): explicit keys win; earlier merges win over later ones."""
    for merged_node in merges:
        merged = _construct(merged_node, memo)
        if not isinstance(merged, dict):
            raise _Refused(Message.of("config.yaml.merge_not_mapping"), merged_node)
        for key, value in merged.items():
            mapping.setdefault(key, value)


class _Refused(yaml.MarkedYAMLError):
    """A problem of the portal's own found while building the data, where the parser's are reported."""

    def __init__(self, message: Message, node: yaml.Node) -> None:
        super().__init__(problem=message.text, problem_mark=node.start_mark)
        self.message = message


def _json_words(said: str) -> Message | str:
    return texts.parser_words(said, texts.JSON_WORDS)


def _yaml_words(said: str) -> Message | str:
    return texts.parser_words(said, texts.YAML_WORDS)


def _yaml_syntax_error(exc: yaml.MarkedYAMLError) -> JobConfigError:
    problem: Message | str
    if isinstance(exc, _Refused):
        problem = exc.message
    elif exc.problem or exc.context:
        problem = _yaml_words(exc.problem or exc.context or "")
    else:
        problem = Message.of("config.yaml.invalid")
    context, mark, noticed = exc.context, exc.problem_mark or exc.context_mark, None
    if context == "while scanning a simple key" and exc.context_mark:
        # The offending line is where the key started; the parser only notices a line later.
        mark, noticed = exc.context_mark, exc.problem_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
    where = {"line": _number(line), "column": _number(column), "problem": problem}
    message: Message
    if noticed is not None and context:
        message = Message.of(
            "config.yaml_syntax_noticed",
            **where,
            context=_yaml_words(context),
            at_line=noticed.line + 1,
            at_column=noticed.column + 1,
        )
    elif context and exc.context_mark:
        at_line, at_column = exc.context_mark.line + 1, exc.context_mark.column + 1
        message = Message.of(
            "config.yaml_syntax_in", **where, context=_yaml_words(context), at_line=at_line, at_column=at_column
        )
    else:
        message = Message.of("config.yaml_syntax", **where)
    return JobConfigError([("", message)], line=line, column=column)


def _number(value: int | None) -> int | str:
    return "None" if value is None else value


def _check_nesting(text: str) -> None:
    """Refuse, before any parser recurses, nesting that could exhaust the C stack."""
    compact = text.count("- ") + text.count("? ") > MAX_FLOW_NESTING
    too_deep = compact and _COMPACT_NESTING.search(text) is not None
    if not too_deep and text.count("[") + text.count("{") > MAX_FLOW_NESTING:
        brackets = _NOT_BRACKET.sub("", text)
        too_deep = max(accumulate(map(_BRACKET_DELTA.__getitem__, brackets))) > MAX_FLOW_NESTING
    if too_deep:
        raise JobConfigError([("", Message.of("config.too_deep", levels=MAX_DEPTH))])


def is_unicode_text(text: str) -> bool:
    """False for text a JSON or YAML escape (`\\ud800`) gave a lone surrogate: it cannot be stored,
    logged or sent anywhere as UTF-8."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalar_problem(value: Any) -> Message | None:
    """What is wrong with a leaf value of a config, if anything."""
    kind = type(value)
    if kind is str:
        return None if is_unicode_text(value) else Message.of("config.lone_surrogate")
    if kind is int:
        return (
            None if -MAX_INTEGER - 1 <= value <= MAX_INTEGER else Message.of("config.integer_too_big", most=MAX_INTEGER)
        )
    if kind is float:
        if not math.isfinite(value):
            return Message.of("config.not_finite")
        # 1e308 is whole: the schema would take it for an integer beyond what any column holds.
        return None if abs(value) <= MAX_INTEGER else Message.of("config.integer_too_big", most=MAX_INTEGER)
    if value is None or kind is bool:
        return None
    return Message.of("config.unsupported_value", type=kind.__name__)


# Where a config holds the user's own values, passed to tasks as text (a float there is no column's
# integer): any finite float is theirs to write.
FREE_FORM = frozenset({"parameters", "secrets", "extras", "jobEnvs"})


def _free_float(value: Any, path: tuple[str | int, ...], key: str | int) -> bool:
    return type(value) is float and math.isfinite(value) and (path[0] if path else key) in FREE_FORM


def check_tree(doc: Any) -> None:
    """Iteratively (never recursing) check depth, size and that every value is plain JSON data."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    count = 0
    while stack:
        container, path = stack.pop()
        if len(path) >= MAX_DEPTH and container:
            raise JobConfigError([(field_path(path), Message.of("config.nested_too_deep", levels=MAX_DEPTH))])
        is_dict = type(container) is dict
        for key, value in container.items() if is_dict else enumerate(container):
            if is_dict and type(key) is not str:
                message = Message.of("config.key_not_text", type=type(key).__name__)
                raise JobConfigError([(field_path((*path, str(key))), message)])
            if is_dict and not is_unicode_text(str(key)):
                raise JobConfigError([(field_path((*path, ascii(key))), Message.of("config.lone_surrogate"))])
            kind = type(value)
            if kind is dict or kind is list:
                stack.append((value, (*path, key)))
            elif kind is str and value.isascii():  # most values: no call
                continue
            elif (problem := _scalar_problem(value)) is not None and not _free_float(value, path, key):
                raise JobConfigError([(field_path((*path, key)), problem)])
        count += len(container)
        if count > MAX_NODES:
            raise JobConfigError([("", Message.of("config.too_many_values", count=MAX_NODES))])
