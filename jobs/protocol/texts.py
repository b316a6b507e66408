"""What the protocol says about a config: every code of a config error, its English template beside
it (catalogue.Text). A producer makes the Message (`MIN(value=100)`); the API answers its code,
parameters and English, the pages render it in the reader's language (web.texts).

Codes are `config.<what>`; the words a message is made of (a type's name, what a name may contain,
a YAML or JSON parser's problem) are messages too, translated where they are put in. Quoted names
keep their quotes in the template, the name alone is the parameter."""

from __future__ import annotations

from collections.abc import Sequence

from catalogue import Message, Text, text_of

# What libyaml (and PyYAML, where the portal runs without libyaml) say: the problem and where it was
# parsing. A phrase not listed stays as the parser said it.
YAML_WORDS = {
    text.template: text
    for text in (
        text_of("config.yaml.expected_comma_or_bracket"),
        text_of("config.yaml.expected_comma_or_brace"),
        text_of("config.yaml.expected_key"),
        text_of("config.yaml.expected_dash"),
        text_of("config.yaml.expected_node_content"),
        text_of("config.yaml.expected_colon"),
        text_of("config.yaml.mapping_values_in_context"),
        text_of("config.yaml.mapping_values_here"),
        text_of("config.yaml.block_sequence_in_context"),
        text_of("config.yaml.tab_violates_indentation"),
        text_of("config.yaml.tab_for_indentation"),
        text_of("config.yaml.cannot_start_token"),
        text_of("config.yaml.unexpected_end"),
        text_of("config.yaml.unknown_escape"),
        text_of("config.yaml.undefined_alias"),
        text_of("config.yaml.undefined_tag_handle"),
        text_of("config.yaml.duplicate_anchor"),
        text_of("config.yaml.second_occurrence"),
        text_of("config.yaml.expected_alphanumeric"),
        text_of("config.yaml.expected_line_break"),
        text_of("config.yaml.expected_document_start"),
        text_of("config.yaml.another_document"),
        text_of("config.yaml.single_document"),
        text_of("config.yaml.while_flow_sequence"),
        text_of("config.yaml.while_flow_mapping"),
        text_of("config.yaml.while_block_mapping"),
        text_of("config.yaml.while_block_collection"),
        text_of("config.yaml.while_block_node"),
        text_of("config.yaml.while_flow_node"),
        text_of("config.yaml.while_node"),
        text_of("config.yaml.while_simple_key"),
        text_of("config.yaml.while_plain_scalar"),
        text_of("config.yaml.while_quoted_scalar"),
        text_of("config.yaml.while_block_scalar"),
        text_of("config.yaml.while_anchor"),
        text_of("config.yaml.while_alias"),
        text_of("config.yaml.while_tag"),
        text_of("config.yaml.while_next_token"),
        text_of("config.yaml.while_quoted_scalar_parsing"),
    )
}
# What Python's json module says (JSONDecodeError.msg; trailing commas never reach it: they are removed).
JSON_WORDS = {
    text.template: text
    for text in (
        text_of("config.json.expecting_value"),
        text_of("config.json.expecting_comma"),
        text_of("config.json.expecting_colon"),
        text_of("config.json.expecting_property_name"),
        text_of("config.json.extra_data"),
        text_of("config.json.invalid_control_character"),
        text_of("config.json.unterminated_string"),
    )
}


def parser_words(said: str, words: dict[str, Text]) -> Message | str:
    """A parser's phrase as a message when it is one the portal translates, else as it was said."""
    text = words.get(said)
    return text() if text is not None else said


# --- the schema ---------------------------------------------------------------------------------

TYPE_NAMES = {
    "integer": text_of("config.type.integer"),
    "number": text_of("config.type.number"),
    "string": text_of("config.type.string"),
    "boolean": text_of("config.type.boolean"),
    "object": text_of("config.type.mapping"),
    "array": text_of("config.type.list"),
    "null": text_of("config.type.null"),
}
# What a name pattern of the schemas allows, in words: a raw regex means little to most users.
ALLOWED_WORDS = {
    r"^[A-Za-z0-9\-._~]+$": text_of("config.allowed.name_tilde_dash"),
    r"^[A-Za-z0-9\-._]+$": text_of("config.allowed.name_dash"),
    r"^[A-Za-z0-9._~]+$": text_of("config.allowed.name_tilde"),
    r"^[a-zA-Z0-9_-]+$": text_of("config.allowed.label"),
    r"^[a-zA-Z_][a-zA-Z0-9_]*$": text_of("config.allowed.identifier"),
}


def must_be(kinds: Sequence[str]) -> Message:
    """`must be an integer or null`: the schema's type names, the last ones joined by "or"."""
    names: list[Message | str] = [TYPE_NAMES[kind]() if kind in TYPE_NAMES else kind for kind in kinds]
    types = names[-1]
    for name in reversed(names[:-1]):
        types = Message.of("config.either", one=name, other=types)
    return Message.of("config.type", types=types)


# Where a registry (or a webhook's URL) points inside the portal's network (jobs.protocol.addresses).
ADDRESS_KINDS = {
    "loopback": text_of("address.loopback"),
    "link_local": text_of("address.link_local"),
    "private": text_of("address.private"),
    "multicast": text_of("address.multicast"),
    "reserved": text_of("address.reserved"),
    "shared": text_of("address.shared"),
    "site_local": text_of("address.site_local"),
    "special": text_of("address.special"),
}


# --- exit diagnostics: how a task or a job ended, what the user reads (jobs.protocol.exitspec) ---
# The whole is a message: "<phrase>: <why>" (EXITED), the log's line after it where a pattern
# matched one (LOG_SAYS), "<role>-<index>: ..." where it is a failed job's (TASK); the phrase, the
# log's line and an engine's own words (SAID) are never translated, the exit spec's reason by its
# exact text (the pages' EXIT_SPEC_TEXTS).

NEVER_MET = {
    "afterok": text_of("exit.dependency.afterok"),
    "afternotok": text_of("exit.dependency.afternotok"),
}
