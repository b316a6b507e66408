"""Exit diagnostics in the page's language.

The executors, the stop and the alerts speak English; the pages translate their messages here, by
their shape. A message of an unknown shape stays as it is. (Config and storage errors and why a job
waits are messages with codes now, `texts.py` modules rendered by web.texts: issue 45 moves the
rest there too, and this file goes.)
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
