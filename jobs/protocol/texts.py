"""What the protocol says about a config: every code of a config error and its English template are
in jobs/protocol/texts.json (catalogue). A producer makes the Message
(`Message.of("config.min", value=100)`); the API answers its code, parameters and English, the
pages render it in the reader's language (web.texts). Here: the tables and helpers over them.

Codes are `config.<what>`; the words a message is made of (a type's name, what a name may contain,
a YAML or JSON parser's problem) are messages too, translated where they are put in. Quoted names
keep their quotes in the template, the name alone is the parameter."""

from __future__ import annotations

from collections.abc import Sequence

from catalogue import Message, Text, table, texts_under

# What libyaml (and PyYAML, where the portal runs without libyaml) say: the problem and where it was
# parsing. A phrase not listed stays as the parser said it.
YAML_WORDS = {text.template: text for text in texts_under("config.yaml.") if not text.names}
# What Python's json module says (JSONDecodeError.msg; trailing commas never reach it: they are removed).
JSON_WORDS = {text.template: text for text in texts_under("config.json.")}


def parser_words(said: str, words: dict[str, Text]) -> Message | str:
    """A parser's phrase as a message when it is one the portal translates, else as it was said."""
    text = words.get(said)
    return text() if text is not None else said


# --- the schema ---------------------------------------------------------------------------------

TYPE_NAMES = table("config.type.")  # a JSON schema type -> its name
# What a name pattern of the schemas allows, in words: a raw regex means little to most users.
ALLOWED_WORDS = table("config.allowed.")


def must_be(kinds: Sequence[str]) -> Message:
    """`must be an integer or null`: the schema's type names, the last ones joined by "or"."""
    names: list[Message | str] = [TYPE_NAMES[kind]() if kind in TYPE_NAMES else kind for kind in kinds]
    types = names[-1]
    for name in reversed(names[:-1]):
        types = Message.of("config.either", one=name, other=types)
    return Message.of("config.type", types=types)


# Where a registry (or a webhook's URL) points inside the portal's network (jobs.protocol.addresses).
ADDRESS_KINDS = table("address.")


# --- exit diagnostics: how a task or a job ended, what the user reads (jobs.protocol.exitspec) ---
# The whole is a message: "<phrase>: <why>" (`exit.exited`), the log's line after it where a pattern
# matched one (`exit.log_says`), "<role>-<index>: ..." where it is a failed job's (`exit.task`); the
# phrase, the log's line and an engine's own words (`exit.said`) are never translated, the exit
# spec's reason by its exact text (the pages' EXIT_SPEC_TEXTS).

NEVER_MET = table("exit.dependency.")  # a dependency's kind -> why it can never be met
