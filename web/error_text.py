"""Config and storage errors in the page's language.

The protocol is pure Python and speaks English (the API and `validatejob` answer in it); the pages
translate its messages here, by their shape. A message of an unknown shape stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from catalogue import Message, Text
from clusters.slurm import texts as slurm_texts
from web.texts import translated

TYPE_WORDS = {
    "an integer": _("an integer"),
    "a number": _("a number"),
    "a string": _("a string"),
    "a boolean (true or false)": _("a boolean (true or false)"),
    "a mapping": _("a mapping"),
    "a list": _("a list"),
    "null": "null",
}
ALLOWED_WORDS = {
    "letters, digits and - . _ ~": _("letters, digits and - . _ ~"),
    "letters, digits and - . _": _("letters, digits and - . _"),
    "letters, digits and . _ ~": _("letters, digits and . _ ~"),
    "letters, digits, _ and -": _("letters, digits, _ and -"),
    "letters, digits and _, not starting with a digit": _("letters, digits and _, not starting with a digit"),
}


# What the YAML parser (libyaml, PyYAML) says, in the page's language: the problem and where it
# was parsing. A problem not listed stays as the parser said it.
YAML_WORDS = {
    "did not find expected ',' or ']'": _("did not find expected ',' or ']'"),
    "did not find expected ',' or '}'": _("did not find expected ',' or '}'"),
    "did not find expected key": _("did not find expected key"),
    "did not find expected '-' indicator": _("did not find expected '-' indicator"),
    "did not find expected node content": _("did not find expected node content"),
    "could not find expected ':'": _("could not find expected ':'"),
    "mapping values are not allowed in this context": _("mapping values are not allowed in this context"),
    "mapping values are not allowed here": _("mapping values are not allowed here"),
    "block sequence entries are not allowed in this context": _(
        "block sequence entries are not allowed in this context"
    ),
    "found a tab character that violates indentation": _("found a tab character that violates indentation"),
    "found a tab character where an indentation space is expected": _(
        "found a tab character where an indentation space is expected"
    ),
    "found character that cannot start any token": _("found character that cannot start any token"),
    "found unexpected end of stream": _("found unexpected end of stream"),
    "found unknown escape character": _("found unknown escape character"),
    "found undefined alias": _("found undefined alias"),
    "found undefined tag handle": _("found undefined tag handle"),
    "found duplicate anchor": _("found duplicate anchor"),
    "<< must merge a mapping": _("<< must merge a mapping"),
    "invalid YAML": _("invalid YAML"),
    "while parsing a flow sequence": _("while parsing a flow sequence"),
    "while parsing a flow mapping": _("while parsing a flow mapping"),
    "while parsing a block mapping": _("while parsing a block mapping"),
    "while parsing a block collection": _("while parsing a block collection"),
    "while parsing a block node": _("while parsing a block node"),
    "while parsing a flow node": _("while parsing a flow node"),
    "while parsing a node": _("while parsing a node"),
    "while scanning a simple key": _("while scanning a simple key"),
    "while scanning a plain scalar": _("while scanning a plain scalar"),
    "while scanning a quoted scalar": _("while scanning a quoted scalar"),
    "while scanning a block scalar": _("while scanning a block scalar"),
    "while scanning an anchor": _("while scanning an anchor"),
    "while scanning an alias": _("while scanning an alias"),
    "while scanning a tag": _("while scanning a tag"),
    "while composing a node": _("while composing a node"),
}


JSON_WORDS = {
    "Expecting value": _("Expecting value"),
    "Expecting ',' delimiter": _("Expecting ',' delimiter"),
    "Expecting ':' delimiter": _("Expecting ':' delimiter"),
    "Expecting property name enclosed in double quotes": _("Expecting property name enclosed in double quotes"),
    "Extra data": _("Extra data"),
    "Invalid control character at": _("Invalid control character at"),
    "Unterminated string starting at": _("Unterminated string starting at"),
    "Illegal trailing comma before end of array": _("Illegal trailing comma before end of array"),
    "Illegal trailing comma before end of object": _("Illegal trailing comma before end of object"),
}


def _yaml(text: str) -> str:
    return str(YAML_WORDS.get(text, text))


def _json(text: str) -> str:
    return str(JSON_WORDS.get(text, text))


def _types(text: str) -> str:
    return str(_(" or ")).join(str(TYPE_WORDS.get(word, word)) for word in text.split(" or "))


def _allowed(text: str) -> str:
    return str(ALLOWED_WORDS.get(text, text))


# (message shape, its translation, how a captured part is translated) -- the protocol's
# messages (jobs.protocol.schema, v2, templating), the database checks (jobs.actions) and storage.
MESSAGES: list[tuple[re.Pattern[str], Promise, dict[str, Callable[[str], str]]]] = [
    (re.compile(r"is required"), _("is required"), {}),
    (re.compile(r"must be >= (?P<value>\S+)"), _("must be >= %(value)s"), {}),
    (re.compile(r"must be <= (?P<value>-?[\d.]+)"), _("must be <= %(value)s"), {}),
    (re.compile(r"must be <= instances \((?P<value>\d+)\)"), _("must be <= instances (%(value)s)"), {}),
    (
        re.compile(r"must be <= resourcePerInstance\.memoryMB \((?P<value>\d+)\)"),
        _("must be <= resourcePerInstance.memoryMB (%(value)s)"),
        {},
    ),
    (re.compile(r"must be -1, null or >= 1"), _("must be -1, null or >= 1"), {}),
    (re.compile(r"must not be blank"), _("must not be blank"), {}),
    (re.compile(r"must not be empty"), _("must not be empty"), {}),
    (re.compile(r"must be at most (?P<value>\d+) characters"), _("must be at most %(value)s characters"), {}),
    (re.compile(r"must be one of: (?P<options>.+)"), _("must be one of: %(options)s"), {}),
    (re.compile(r"may contain only (?P<words>.+)"), _("may contain only %(words)s"), {"words": _allowed}),
    (re.compile(r"name may contain only (?P<words>.+)"), _("name may contain only %(words)s"), {"words": _allowed}),
    (re.compile(r"must be (?P<types>(?:an? |null).+)"), _("must be %(types)s"), {"types": _types}),
    (
        re.compile(r"unknown key (?P<key>'[^']*') \(did you mean (?P<close>'[^']*')\?\)"),
        _("unknown key %(key)s (did you mean %(close)s?)"),
        {},
    ),
    (re.compile(r"unknown key (?P<key>.+)"), _("unknown key %(key)s"), {}),
    (
        re.compile(r"secret (?P<name>'[^']*') has no value: type it \(secret values are never copied\)"),
        _("secret %(name)s has no value: type it (secret values are never copied)"),
        {},
    ),
    (
        re.compile(r"secret (?P<name>'[^']*') is \*{6}, a masked value: type the real one"),
        _("secret %(name)s is ******, a masked value: type the real one"),
        {},
    ),
    (
        re.compile(r"the password is \*{6}, a masked value: type the real one"),
        _("the password is ******, a masked value: type the real one"),
        {},
    ),
    (
        re.compile(r"undefined parameter (?P<name>'[^']*') \(not in parameters\)"),
        _("undefined parameter %(name)s (not in parameters)"),
        {},
    ),
    (
        re.compile(r"undefined secret (?P<name>'[^']*') \(not in secrets\)"),
        _("undefined secret %(name)s (not in secrets)"),
        {},
    ),
    (
        re.compile(r'virtual cluster (?P<name>"[^"]*") does not exist'),
        _("virtual cluster %(name)s does not exist"),
        {},
    ),
    (
        re.compile(r'you may not submit to virtual cluster (?P<name>"[^"]*")'),
        _("you may not submit to virtual cluster %(name)s"),
        {},
    ),
    (
        re.compile(r'GPU type (?P<name>"[^"]*") does not exist \(known: (?P<known>.*)\)'),
        _("GPU type %(name)s does not exist (known: %(known)s)"),
        {},
    ),
    (
        re.compile(r'job (?P<name>"[^"]*") already exists for user (?P<user>\S+)'),
        _("job %(name)s already exists for user %(user)s"),
        {},
    ),
    (re.compile(r"the config is empty"), _("the config is empty"), {}),
    (re.compile(r"YAML error: (?P<detail>.+)", re.DOTALL), _("YAML error: %(detail)s"), {}),
    (
        re.compile(
            r"YAML syntax error at line (?P<line>\d+), column (?P<column>\d+): (?P<problem>.+?) "
            r"\((?P<context>while .+) at line (?P<at_line>\d+), column (?P<at_column>\d+)\)"
        ),
        _(
            "YAML syntax error at line %(line)s, column %(column)s: %(problem)s "
            "(%(context)s at line %(at_line)s, column %(at_column)s)"
        ),
        {"problem": _yaml, "context": _yaml},
    ),
    (
        re.compile(
            r"YAML syntax error at line (?P<line>\d+), column (?P<column>\d+): (?P<problem>.+?) "
            r"(?P<context>while .+) \(noticed at line (?P<at_line>\d+), column (?P<at_column>\d+)\)"
        ),
        _(
            "YAML syntax error at line %(line)s, column %(column)s: %(problem)s %(context)s "
            "(noticed at line %(at_line)s, column %(at_column)s)"
        ),
        {"problem": _yaml, "context": _yaml},
    ),
    (
        re.compile(r"YAML syntax error at line (?P<line>\d+), column (?P<column>\d+): (?P<problem>.+)"),
        _("YAML syntax error at line %(line)s, column %(column)s: %(problem)s"),
        {"problem": _yaml},
    ),
    (
        re.compile(r"JSON syntax error at line (?P<line>\d+), column (?P<column>\d+): (?P<problem>.+)"),
        _("JSON syntax error at line %(line)s, column %(column)s: %(problem)s"),
        {"problem": _json},
    ),
    (re.compile(r"JSON error: (?P<detail>.+)", re.DOTALL), _("JSON error: %(detail)s"), {}),
    (
        re.compile(r"(?P<path>.+): no such directory in your storage area"),
        _("%(path)s: no such directory in your storage area"),
        {},
    ),
    (re.compile(r"(?P<path>.+): '\.\.' is not allowed in a path"), _("%(path)s: '..' is not allowed in a path"), {}),
    # jobs.protocol.priority
    (
        re.compile(r"unknown priority class (?P<name>'[^']*') \(one of (?P<options>.+)\)"),
        _("unknown priority class %(name)s (one of %(options)s)"),
        {},
    ),
    (
        re.compile(
            r"(?P<name>'[^']*') is above the highest class virtual cluster (?P<vc>\"[^\"]*\") allows (?P<max>'[^']*')"
        ),
        _("%(name)s is above the highest class virtual cluster %(vc)s allows (%(max)s)"),
        {},
    ),
    (
        re.compile(r'only admins and the users virtual cluster (?P<vc>"[^"]*") names may use class "crit"'),
        _('only admins and the users virtual cluster %(vc)s names may use class "crit"'),
        {},
    ),
    (re.compile(r"must be one of (?P<options>crit, .+)"), _("must be one of %(options)s"), {}),
    (
        re.compile(r"must be a whole number of seconds, 0 or more"),
        _("must be a whole number of seconds, 0 or more"),
        {},
    ),
    (
        re.compile(r"must be at most (?P<cap>\d+) \(the portal's PAI_MAX_GRACE_SECONDS\)"),
        _("must be at most %(cap)s (the portal's PAI_MAX_GRACE_SECONDS)"),
        {},
    ),
    (
        re.compile(r'no node of virtual cluster (?P<vc>"[^"]*") has InfiniBand devices; remove it, or ask an admin'),
        _("no node of virtual cluster %(vc)s has InfiniBand devices; remove it, or ask an admin"),
        {},
    ),
    (
        re.compile(r"must be at most (?P<cap>\d+) \(the portal's PAI_MAX_SHM_MB\)"),
        _("must be at most %(cap)s (the portal's PAI_MAX_SHM_MB)"),
        {},
    ),
    # jobs.protocol.sweeps: a sweep's size
    (re.compile(r"(?P<count>\d+) runs, at most (?P<most>\d+)"), _("%(count)s runs, at most %(most)s"), {}),
    (
        re.compile(r"at least (?P<count>\d+) runs, at most (?P<most>\d+)"),
        _("at least %(count)s runs, at most %(most)s"),
        {},
    ),
    (
        re.compile(
            r"(?P<count>\d+) runs of up to (?P<each>[\d.]+ [KM]B) each make (?P<total>[\d.]+ [KM]B) in all, "
            r"at most (?P<most>\d+) MB \(fewer runs, or a shorter config\)"
        ),
        _(
            "%(count)s runs of up to %(each)s each make %(total)s in all, at most %(most)s MB "
            "(fewer runs, or a shorter config)"
        ),
        {},
    ),
]
# jobs.sweeps: a sweep's run other than the first, refused as a job with its values in.
SWEEP_RUN = re.compile(r"run (?P<run>\S+) \((?P<values>.*?)\): (?P<message>.+)", re.DOTALL)


# Why an image reference is refused (jobs.protocol.images.reference_error): each reason alone.
IMAGE_REASONS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"is empty"), _("is empty")),
    (
        re.compile(r"has a space in it; an image reference has none \(e\.g\. (?P<example>\S+)\)"),
        _("has a space in it; an image reference has none (e.g. %(example)s)"),
    ),
    (
        re.compile(r"has an invalid digest after @ \(it is algorithm:hex, e\.g\. sha256: and 64 hex digits\)"),
        _("has an invalid digest after @ (it is algorithm:hex, e.g. sha256: and 64 hex digits)"),
    ),
    (
        re.compile(
            r"has an invalid tag (?P<tag>.+): a tag is up to 128 letters, digits, _ \. and -, not starting with \. or -"
        ),
        _("has an invalid tag %(tag)s: a tag is up to 128 letters, digits, _ . and -, not starting with . or -"),
    ),
    (re.compile(r"has a name longer than (?P<most>\d+) characters"), _("has a name longer than %(most)s characters")),
    (re.compile(r"has an invalid registry host (?P<host>.+)"), _("has an invalid registry host %(host)s")),
    (
        re.compile(
            r"starts with (?P<first>'[^']*'), which Docker would read as a registry's host name because it has "
            r"capitals; repository names are lowercase \(e\.g\. (?P<example>\S+)\)"
        ),
        _(
            "starts with %(first)s, which Docker would read as a registry's host name because it has capitals; "
            "repository names are lowercase (e.g. %(example)s)"
        ),
    ),
    (
        re.compile(r"must be lowercase in its repository name \((?P<lower>\S+), not (?P<given>\S+)\)"),
        _("must be lowercase in its repository name (%(lower)s, not %(given)s)"),
    ),
    (
        re.compile(
            r"has an invalid repository name part (?P<part>'[^']*'): lowercase letters and digits, "
            r"separated by \. _ __ or -"
        ),
        _("has an invalid repository name part %(part)s: lowercase letters and digits, separated by . _ __ or -"),
    ),
]
IMAGE_REFERENCE = re.compile(r"(?P<image>'.*') is not a valid image reference: (?P<why>.+)", re.DOTALL)


def _image_reasons(text: str) -> str:
    parts = []
    for reason in text.split("; and it "):
        for pattern, template in IMAGE_REASONS:
            if match := pattern.fullmatch(reason):
                reason = str(template) % match.groupdict() if match.groupdict() else str(template)
                break
        parts.append(reason)
    return str(_("; and it ")).join(parts)


def translate_error(message: str) -> str:
    """The message in the active language when its shape is known, else unchanged."""
    if run := SWEEP_RUN.fullmatch(message):
        return str(_("run %(run)s (%(values)s): %(message)s")) % {
            "run": run["run"],
            "values": run["values"],
            "message": translate_error(run["message"]),
        }
    if reference := IMAGE_REFERENCE.fullmatch(message):
        return str(_("%(image)s is not a valid image reference: %(why)s")) % {
            "image": reference["image"],
            "why": _image_reasons(reference["why"]),
        }
    for pattern, template, parts in MESSAGES:
        match = pattern.fullmatch(message)
        if match:
            values = {key: parts.get(key, str)(value) for key, value in match.groupdict().items()}
            return str(template) % values if values else str(template)
    return message


# --- exit diagnostics: the portal's own sentences (the executors', the stop's), by their shape --------
# What an engine or a log said inside them stays as it was said.

DIAGNOSTICS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"stopped at the user's request\."), _("stopped at the user's request.")),
    (  # jobs.lifecycle.request_alert_stop
        re.compile(r"stopped because alert rule (?P<rule>.+) fired\."),
        _("stopped because alert rule %(rule)s fired."),
    ),
    (  # jobs.lifecycle.request_idle_stop
        re.compile(r"stopped because (?P<app>jupyter|tensorboard|http) was idle for (?P<minutes>[\d.]+) minutes\."),
        _("stopped because %(app)s was idle for %(minutes)s minutes."),
    ),
    (  # jobs.protocol.dependencies.never_reason
        re.compile(
            r"its dependency can never be met: job (?P<job>\S+) ended (?P<state>\w+) \(afterok needs it to succeed\)"
        ),
        _("its dependency can never be met: job %(job)s ended %(state)s (afterok needs it to succeed)"),
    ),
    (
        re.compile(
            r"its dependency can never be met: job (?P<job>\S+) ended (?P<state>\w+) "
            r"\(afternotok needs it to fail or be stopped\)"
        ),
        _("its dependency can never be met: job %(job)s ended %(state)s (afternotok needs it to fail or be stopped)"),
    ),
    (
        re.compile(r"killed: out of memory \(the task's limit is (?P<mb>\d+) MB, memoryMB\)"),
        _("killed: out of memory (the task's limit is %(mb)s MB, memoryMB)"),
    ),
    (re.compile(r"the task's process is gone"), _("the task's process is gone")),
    (
        re.compile(r"the task's container (?P<id>\w+) is gone \(removed outside the portal\)"),
        _("the task's container %(id)s is gone (removed outside the portal)"),
    ),
    (
        re.compile(r"the task's container was created but never started"),
        _("the task's container was created but never started"),
    ),
    (
        re.compile(r"the node's Docker engine \((?P<url>[^)]*)\) does not answer: "),
        _("the node's Docker engine (%(url)s) does not answer: "),
    ),
    (re.compile(r"Slurm: a node failed"), _("Slurm: a node failed")),
    (re.compile(r"Slurm: the task ran out of memory"), _("Slurm: the task ran out of memory")),
    (re.compile(r"Slurm preempted the job"), _("Slurm preempted the job")),
    (re.compile(r"Slurm: the job reached its time limit"), _("Slurm: the job reached its time limit")),
]


def translate_diagnostics(text: str) -> str:
    """Exit diagnostics with the portal's own sentences in the active language."""
    if (slurm := _slurm_ending(text)) is not None:  # (a job Slurm refused: its reason is the diagnostics)
        return translated(slurm)
    for pattern, template in DIAGNOSTICS:
        text = pattern.sub(_shown_in(template), text)
    return text


def _shown_in(template: Promise) -> Callable[[re.Match[str]], str]:
    def shown(match: re.Match[str]) -> str:
        return str(template) % match.groupdict() if match.groupdict() else str(template)

    return shown


# A job Slurm will not run ends with Slurm's reason as its diagnostics (clusters.slurm.reasons'
# final_reason, refusal_reason), kept in English like all diagnostics for now: found back as their
# messages (by the catalogue's own templates) to be shown in the page's language.
_SLURM_ENDINGS = (slurm_texts.CANNOT_RUN, slurm_texts.REFUSES)
_SLURM_SENTENCES = (*slurm_texts.REASONS.values(), *slurm_texts.REFUSALS.values())
_SLURM_PARTS = {
    "sentence": (*_SLURM_SENTENCES, slurm_texts.OTHER_REASON, slurm_texts.SEE_ITS_WORDS),
    "asks": (slurm_texts.ASKS,),
}


def _slurm_ending(text: str) -> Message | None:
    return _matched(text, _SLURM_ENDINGS)


def _matched(text: str, candidates: tuple[Text, ...]) -> Message | None:
    for candidate in candidates:
        if match := _pattern(candidate).fullmatch(text):
            params = {
                name: _matched(value, _SLURM_PARTS.get(name, ())) or value for name, value in match.groupdict().items()
            }
            return Message(candidate.code, params)
    return None


@cache
def _pattern(text: Text) -> re.Pattern[str]:
    """The template with each %(name)s a group."""
    parts = re.split(r"%\((\w+)\)[sdif]", text.template)
    return re.compile(
        "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts)), re.DOTALL
    )


# --- webhooks: why a URL may not receive them (jobs.webhooks.TargetError), and their states -------
WEBHOOK_PLACES = {
    "a loopback address": _("a loopback address"),
    "a link-local address": _("a link-local address"),
    "a private address": _("a private address"),
    "a multicast address": _("a multicast address"),
    "a reserved address": _("a reserved address"),
    "a shared address": _("a shared address"),
    "a site-local address": _("a site-local address"),
    "a special-purpose address": _("a special-purpose address"),
}
WEBHOOK_ERRORS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"must be an http:// or https:// URL"), _("must be an http:// or https:// URL")),
    (
        re.compile(r"must not hold a user name or password \(the secret signs each POST\)"),
        _("must not hold a user name or password (the secret signs each POST)"),
    ),
    (re.compile(r"has an invalid port"), _("has an invalid port")),
    (
        re.compile(r"names a host that does not resolve \((?P<host>.*)\)"),
        _("names a host that does not resolve (%(host)s)"),
    ),
    (
        re.compile(
            r"points at (?P<place>[a-z -]+) \((?P<address>[^)]*)\); an admin may allow the host in (?P<var>\w+)"
        ),
        _("points at %(place)s (%(address)s); an admin may allow the host in %(var)s"),
    ),
    (re.compile(r"pick at least one of (?P<events>.*)"), _("pick at least one of %(events)s")),
    (
        re.compile(r"you have (?P<count>\d+) webhooks already: remove one first"),
        _("you have %(count)s webhooks already: remove one first"),
    ),
]
WEBHOOK_EVENTS = {
    "running": _("runs"),
    "preempted": _("is preempted"),
    "retried": _("is retried"),
    "succeeded": _("succeeds"),
    "failed": _("fails"),
    "stopped": _("is stopped"),
    "alert": _("gets an alert"),
}


def webhook_error_text(text: str) -> str:
    for pattern, template in WEBHOOK_ERRORS:
        match = pattern.fullmatch(text)
        if match:
            values = match.groupdict()
            if "place" in values:
                values["place"] = str(WEBHOOK_PLACES.get(values["place"], values["place"]))
            return str(template) % values if values else str(template)
    return text


# --- alert rules (scheduling.alerts): conditions, actions, what an alert did, rule errors -------------
ALERT_CONDITIONS = {
    "gpu_idle": _("a running job's GPUs idle"),
    "node_down": _("a node down"),
    "job_too_long": _("a job running too long"),
    "queue_too_long": _("jobs waiting too long in a VC"),
}
ALERT_CONDITION_TEXTS = {
    "gpu_idle": _("a running job's GPUs under %(percent)s %% for %(minutes)s minutes"),
    "node_down": _("a node down for %(minutes)s minutes"),
    "job_too_long": _("a job running for more than %(minutes)s minutes"),
    "queue_too_long": _("a job of a VC waiting for more than %(minutes)s minutes"),
}
ALERT_ACTIONS = {
    "notify_owner": _("notify the job's owner"),
    "notify_admins": _("notify the admins"),
    "tag_job": _("tag the job"),
    "stop_job": _("stop the job after the grace"),
    "cordon_node": _("cordon the node"),
}
ALERT_STEPS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"fired"), _("fired")),
    (re.compile(r"cleared"), _("cleared")),
    (re.compile(r"notified the admins"), _("notified the admins")),
    (re.compile(r"notified (?P<user>\S+)"), _("notified %(user)s")),
    (re.compile(r"tagged (?P<tag>.+)"), _("tagged %(tag)s")),
    (re.compile(r"cordoned (?P<node>.+)"), _("cordoned %(node)s")),
    (re.compile(r"stopped the job"), _("stopped the job")),
    (re.compile(r"the job had ended"), _("the job had ended")),
]
ALERT_ERRORS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"name: must be a name of 1 to 100 characters"), _("name: must be a name of 1 to 100 characters")),
    (re.compile(r"name: a rule named (?P<name>.+) exists"), _("name: a rule named %(name)s exists")),
    (re.compile(r"condition: must be one of (?P<choices>.+)"), _("condition: must be one of %(choices)s")),
    (
        re.compile(r"(?P<field>\w+): must be a whole number from (?P<low>\d+) to (?P<high>\d+)"),
        _("%(field)s: must be a whole number from %(low)s to %(high)s"),
    ),
    (re.compile(r"actions: must list some of (?P<choices>.+)"), _("actions: must list some of %(choices)s")),
]


def by_shape(text: str, table: list[tuple[re.Pattern[str], Promise]]) -> str:
    """A sentence of the portal's in the page's language, found by its shape in `table`."""
    for pattern, template in table:
        match = pattern.fullmatch(text)
        if match:
            values = match.groupdict()
            return str(template) % values if values else str(template)
    return text
