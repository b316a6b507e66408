"""Why a job waits, exit diagnostics, webhooks' and alerts' words in the page's language.

Placement, the executors and the alerts speak English; the pages translate their messages here, by
their shape. A message of an unknown shape stays as it is. (Config and storage errors are messages
with codes now, jobs/protocol/texts.py and friends, rendered by web.texts: issue 45 moves the rest
there too, and this file goes.)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from clusters.slurm import reasons as slurm_reasons

# --- why a job waits (clusters.placement's reasons, the scheduler's node notes) ----------------------

# A resource after a count ("2 of 8 GPUs"): Chinese puts its measure word before it (8 块 GPU).
COUNTED = {"GPUs": pgettext_lazy("after a count", "GPUs"), "CPUs": pgettext_lazy("after a count", "CPUs")}

_GPUS = r"(?P<gpus>\d+(?: x \S+)?) GPUs"
REASONS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"Waiting to be placed again for a retry\."), _("Waiting to be placed again for a retry.")),
    (  # scheduling.dependencies._within_sweep_caps
        re.compile(r"waiting for a slot: sweep (?P<sweep>\S+) runs at most (?P<cap>\d+) at once \((?P<now>\d+) now\)"),
        _("waiting for a slot: sweep %(sweep)s runs at most %(cap)s at once (%(now)s now)"),
    ),
    (  # jobs.protocol.dependencies.waiting_reason
        re.compile(r"waiting for job (?P<job>\S+) to succeed \(afterok; it is (?P<state>\w+)\)"),
        _("waiting for job %(job)s to succeed (afterok; it is %(state)s)"),
    ),
    (
        re.compile(r"waiting for job (?P<job>\S+) to end \(afterany; it is (?P<state>\w+)\)"),
        _("waiting for job %(job)s to end (afterany; it is %(state)s)"),
    ),
    (
        re.compile(r"waiting for job (?P<job>\S+) to fail or be stopped \(afternotok; it is (?P<state>\w+)\)"),
        _("waiting for job %(job)s to fail or be stopped (afternotok; it is %(state)s)"),
    ),
    (re.compile(r"no schedulable node in the cluster"), _("no schedulable node in the cluster")),
    (  # clusters.placement._HeldRooms.note
        re.compile(r"room on (?P<nodes>.+) is held for job (?P<job>\d+) \(its preemption freed it\)"),
        _("room on %(nodes)s is held for job %(job)s (its preemption freed it)"),
    ),
    (
        re.compile(
            r"user (?P<user>\S+) holds (?P<held>\d+) of the (?P<cap>\d+) GPUs one user may hold in VC "
            r'(?P<vc>"[^"]*") at once, job needs (?P<need>\d+)'
        ),
        _(
            "user %(user)s holds %(held)s of the %(cap)s GPUs one user may hold in VC %(vc)s at once, "
            "job needs %(need)s"
        ),
    ),
    (
        re.compile(
            r'one user may hold at most (?P<cap>\d+) GPUs in VC (?P<vc>"[^"]*") at once, job needs (?P<need>\d+) '
            r"\(it can never fit\)"
        ),
        _("one user may hold at most %(cap)s GPUs in VC %(vc)s at once, job needs %(need)s (it can never fit)"),
    ),
    (
        re.compile(
            r'VC (?P<vc>"[^"]*") quota: (?P<used>\d+) of (?P<limit>\d+) (?P<what>GPUs|CPUs) used, '
            r"job needs (?P<need>\d+)"
        ),
        _("VC %(vc)s quota: %(used)s of %(limit)s %(what)s used, job needs %(need)s"),
    ),
    (
        re.compile(r'VC (?P<vc>"[^"]*") quota: (?P<used>.+) of (?P<limit>.+) memory used, job needs (?P<need>.+)'),
        _("VC %(vc)s quota: %(used)s of %(limit)s memory used, job needs %(need)s"),
    ),
    (
        re.compile(
            r'VC (?P<vc>"[^"]*") quota is (?P<limit>\d+) (?P<what>GPUs|CPUs) in all, '
            r"job needs (?P<need>\d+) \(it can never fit\)"
        ),
        _("VC %(vc)s quota is %(limit)s %(what)s in all, job needs %(need)s (it can never fit)"),
    ),
    (
        re.compile(
            r'VC (?P<vc>"[^"]*") quota is (?P<limit>.+) memory in all, job needs (?P<need>.+) \(it can never fit\)'
        ),
        _("VC %(vc)s quota is %(limit)s memory in all, job needs %(need)s (it can never fit)"),
    ),
    (
        re.compile(r"needs (?P<need>\d+) GPUs on one node; the largest node has (?P<most>\d+) \(it can never fit\)"),
        _("needs %(need)s GPUs on one node; the largest node has %(most)s (it can never fit)"),
    ),
    (
        re.compile(r"needs (?P<need>\d+) CPUs per task; the largest node has (?P<most>\d+) \(it can never fit\)"),
        _("needs %(need)s CPUs per task; the largest node has %(most)s (it can never fit)"),
    ),
    (
        re.compile(r"needs (?P<need>.+) memory per task; the largest node has (?P<most>.+) \(it can never fit\)"),
        _("needs %(need)s memory per task; the largest node has %(most)s (it can never fit)"),
    ),
    (
        re.compile(r"needs " + _GPUS + r" on one node; largest free: (?P<most>\d+) on (?P<node>\S+)"),
        _("needs %(gpus)s GPUs on one node; largest free: %(most)s on %(node)s"),
    ),
    (
        re.compile(r"needs " + _GPUS + r" on one node; largest free: (?P<most>\d+)"),
        _("needs %(gpus)s GPUs on one node; largest free: %(most)s"),
    ),
    (
        re.compile(r"needs (?P<need>\d+) CPUs per task; largest free: (?P<most>\d+) on (?P<node>.+)"),
        _("needs %(need)s CPUs per task; largest free: %(most)s on %(node)s"),
    ),
    (
        re.compile(r"needs (?P<need>.+) memory per task; largest free: (?P<most>.+) on (?P<node>.+)"),
        _("needs %(need)s memory per task; largest free: %(most)s on %(node)s"),
    ),
    (
        re.compile(
            r"needs all (?P<tasks>\d+) tasks at once \(gang\): (?P<gpus>.+) GPUs, (?P<cpus>\d+) CPUs, (?P<memory>.+) "
            r"memory in all; only (?P<fitted>\d+) of (?P<all>\d+) fit now \((?P<free>.+) GPUs free in the cluster\)"
        ),
        _(
            "needs all %(tasks)s tasks at once (gang): %(gpus)s GPUs, %(cpus)s CPUs, %(memory)s memory in all; "
            "only %(fitted)s of %(all)s fit now (%(free)s GPUs free in the cluster)"
        ),
    ),
]
PREEMPTED_NOTE = re.compile(r"Preempted by job (?P<job>\S+) of VC (?P<vc>\S+)")
PREEMPTED_BY_HIGHER = re.compile(r"Preempted by a job of a higher class")
WAITING_TO_RUN_AGAIN = re.compile(r"waiting to run again\.")
PREEMPTING = re.compile(
    r'preempting job\(s\) (?P<jobs>.+) of VC (?P<vc>"[^"]*") \(a lower priority class\) to make room for its whole '
    r"gang; it starts when they have ended \(their grace period at most\)"
)
RECLAIMING = re.compile(
    r'reclaiming VC (?P<vc>"[^"]*")\'s quota from job\(s\) (?P<jobs>.+) \(running on it borrowed\) to make room for '
    r"its whole gang; it starts when they have ended \(their grace period at most\)"
)
NO_LENDER = "; no lending VC has that much idle quota"  # (clusters.placement, after a quota reason)
WAITING_BEHIND = re.compile(
    r'waiting behind job (?P<job>\d+), first in VC (?P<vc>"[^"]*") \((?P<order>FIFO|fair share)\): (?P<why>.+)'
)
NODE_DOWN_NOTE = re.compile(
    r"; (?=node \S+ is down \(|the task left over: |busy: other jobs' tasks hold |VC \"[^\"]*\" quota: "
    r"|room on .+ is held for job )"
)
LEFT_OVER = "the task left over: "  # (clusters.placement.LEFT_OVER and BUSY)
BUSY = re.compile(r"busy: other jobs' tasks hold (?P<nodes>.+)")


# --- why Slurm keeps a job waiting (clusters.slurm.reasons: its English templates made patterns) ---

SLURM_WORDS: dict[str, Promise] = {
    "Resources": _(
        "Slurm waits for resources in partition %(p_name)s: the job asks for %(asks)s; free now: "
        "%(p_free_gpus)s of %(p_gpus)s GPU(s), %(p_free_cpus)s of %(p_cpus)s CPU(s), %(p_free_memory_mb)s MB"
    ),
    "Priority": _(
        "Slurm runs jobs of higher priority in partition %(p_name)s first (it asks for %(asks)s; free now: "
        "%(p_free_gpus)s GPU(s), %(p_free_cpus)s CPU(s))"
    ),
    "PartitionConfig": _(
        "partition %(p_name)s can never hold this job as configured: it asks for %(asks)s; the partition has "
        "%(p_nodes)s node(s) with %(p_gpus)s GPU(s), %(p_cpus)s CPU(s), %(p_memory_mb)s MB in all"
    ),
    "PartitionNodeLimit": _("the job needs more nodes than partition %(p_name)s allows one job (%(p_nodes)s node(s))"),
    "PartitionTimeLimit": _("the job's time limit exceeds partition %(p_name)s's"),
    "PartitionDown": _("partition %(p_name)s is down"),
    "PartitionInactive": _("partition %(p_name)s is inactive"),
    "ReqNodeNotAvail": _("nodes the job needs in partition %(p_name)s are unavailable (down, drained or reserved)"),
    "NodeDown": _("a node the job needs in partition %(p_name)s is down"),
    "QOSMaxGRESPerUser": _("your QOS limits how many GPUs one user may hold at once (the job asks for %(ask_gpus)s)"),
    "QOSMaxCpuPerUserLimit": _(
        "your QOS limits how many CPUs one user may hold at once (the job asks for %(ask_cpus)s)"
    ),
    "QOSMaxJobsPerUserLimit": _("your QOS limits how many jobs one user may run at once"),
    "QOSMaxNodePerUserLimit": _("your QOS limits how many nodes one user may hold at once"),
    "QOSGrpGRES": _("the QOS's GPUs are all in use (the job asks for %(ask_gpus)s)"),
    "QOSGrpCpuLimit": _("the QOS's CPUs are all in use (the job asks for %(ask_cpus)s)"),
    "AssocGrpGRES": _("your account's GPU limit is reached (the job asks for %(ask_gpus)s)"),
    "AssocGrpCpuLimit": _("your account's CPU limit is reached (the job asks for %(ask_cpus)s)"),
    "AssocMaxJobsLimit": _("your account may run no more jobs at once"),
    "JobHeldAdmin": _("a Slurm administrator holds the job"),
    "JobHeldUser": _("the job is held in Slurm"),
    "BeginTime": _("the job's start time has not come yet"),
    "Dependency": _("the job waits for another Slurm job"),
    "None": _("Slurm has not looked at the job yet"),
    "BadConstraints": _(
        "no node of partition %(p_name)s can ever hold the job's tasks as asked (%(asks)s); the partition has "
        "%(p_nodes)s node(s) with %(p_gpus)s GPU(s), %(p_cpus)s CPU(s), %(p_memory_mb)s MB in all"
    ),
}
SLURM_REFUSALS: dict[str, Promise] = {
    "Requested node configuration is not available": _(
        "no node of partition %(p_name)s can hold the job's tasks as asked (%(asks)s); the partition has "
        "%(p_nodes)s node(s) with %(p_gpus)s GPU(s), %(p_cpus)s CPU(s), %(p_memory_mb)s MB in all"
    ),
    "Invalid generic resource (gres) specification": _("partition %(p_name)s has no GPUs of the type the job asks for"),
    "Invalid partition name specified": _("Slurm has no partition %(p_name)s"),
    "Node count specification invalid": _("the job needs more nodes than partition %(p_name)s has (%(p_nodes)s)"),
    "Memory required by task is not available": _("no node of partition %(p_name)s has the memory a task asks for"),
}
SLURM_ASKS = re.compile(r"(?P<tasks>\d+) task\(s\): (?P<gpus>\d+) GPU\(s\), (?P<cpus>\d+) CPU\(s\), (?P<memory>\d+) MB")
SLURM_WAITING = re.compile(
    r"Waiting in Slurm \((?P<code>[^)]*)\): (?P<sentence>.+?)(?:; Slurm expects it to start at (?P<start>.+) UTC)?\."
)
SLURM_CANNOT = re.compile(r"Slurm cannot run the job \((?P<code>[^)]*)\): (?P<sentence>.+?)\.")
SLURM_REFUSED = re.compile(r"Slurm refuses the job \((?P<said>.+)\): (?P<sentence>.+)\.")
SLURM_SUBMITTED = re.compile(r"Submitted to Slurm as job (?P<slurm_id>\d+) in partition (?P<partition>\S+)\.")


def _template_pattern(template: str) -> re.Pattern[str]:
    """`... {p.name} ... {asks}` -> a pattern capturing each field (as `p_name`, `asks`)."""
    parts = re.split(r"\{([\w.]+)\}", template)
    return re.compile(
        "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part.replace('.', '_')}>.+?)" for i, part in enumerate(parts))
    )


def _slurm_patterns(
    english: dict[str, str], translated: dict[str, Promise]
) -> dict[str, tuple[re.Pattern[str], Promise]]:
    return {key: (_template_pattern(text), translated[key]) for key, text in english.items() if key in translated}


_SLURM_WORDS = _slurm_patterns(slurm_reasons.WORDS, SLURM_WORDS)
_SLURM_REFUSALS = _slurm_patterns(slurm_reasons.REFUSALS, SLURM_REFUSALS)


def _slurm_sentence(sentence: str, pattern: re.Pattern[str], template: Promise) -> str:
    match = pattern.fullmatch(sentence)
    if match is None:
        return sentence
    values = match.groupdict()
    if asks := SLURM_ASKS.fullmatch(values.get("asks", "")):
        values["asks"] = str(_("%(tasks)s task(s): %(gpus)s GPU(s), %(cpus)s CPU(s), %(memory)s MB")) % asks.groupdict()
    return str(template) % values


def _slurm_reason(part: str) -> str | None:
    if waiting := SLURM_WAITING.fullmatch(part):
        code, sentence = waiting["code"], waiting["sentence"]
        if code in _SLURM_WORDS:
            sentence = _slurm_sentence(sentence, *_SLURM_WORDS[code])
        elif sentence == f"Slurm's reason: {code}":
            sentence = str(_("Slurm's reason: %(code)s")) % {"code": code}
        # The zone goes with the time, not into the message: a catalog word "UTC" would count as
        # English on every page that shows a time.
        values = {"code": code, "sentence": sentence, "time": f"{waiting['start']} UTC"}
        if waiting["start"]:
            return str(_("Waiting in Slurm (%(code)s): %(sentence)s; Slurm expects it to start at %(time)s.")) % values
        return str(_("Waiting in Slurm (%(code)s): %(sentence)s.")) % values
    if cannot := SLURM_CANNOT.fullmatch(part):
        code, sentence = cannot["code"], cannot["sentence"]
        if code in _SLURM_WORDS:
            sentence = _slurm_sentence(sentence, *_SLURM_WORDS[code])
        return str(_("Slurm cannot run the job (%(code)s): %(sentence)s.")) % {"code": code, "sentence": sentence}
    if refused := SLURM_REFUSED.fullmatch(part):
        sentence = refused["sentence"]
        known = next((key for key in _SLURM_REFUSALS if key in refused["said"]), None)
        if known:
            sentence = _slurm_sentence(sentence, *_SLURM_REFUSALS[known])
        return str(_("Slurm refuses the job (%(said)s): %(sentence)s.")) % {
            "said": refused["said"],
            "sentence": sentence,
        }
    if submitted := SLURM_SUBMITTED.fullmatch(part):
        return str(_("Submitted to Slurm as job %(slurm_id)s in partition %(partition)s.")) % submitted.groupdict()
    return None


def translate_reason(reason: str) -> str:
    """Why a job waits, in the active language where the shape is known (each part on its own)."""
    note = ""
    if reason.startswith("Preempted by ") and "; " in reason:  # (scheduling.preempting's note first)
        first, reason = reason.split("; ", 1)
        note = _reason_part(first) + "; "
    if (preempting := PREEMPTING.fullmatch(reason)) is not None:
        return (
            note
            + str(
                _(
                    "preempting job(s) %(jobs)s of VC %(vc)s (a lower priority class) to make room for its whole gang; "
                    "it starts when they have ended (their grace period at most)"
                )
            )
            % preempting.groupdict()
        )
    if (reclaiming := RECLAIMING.fullmatch(reason)) is not None:
        return (
            note
            + str(
                _(
                    "reclaiming VC %(vc)s's quota from job(s) %(jobs)s (running on it borrowed) to make room for its "
                    "whole gang; it starts when they have ended (their grace period at most)"
                )
            )
            % reclaiming.groupdict()
        )
    return note + "; ".join(_reason_part(part) for part in NODE_DOWN_NOTE.split(reason))


NODE_DOWN = re.compile(r"node (?P<node>\S+) is down \((?P<why>.*)\)")
ENGINE_SILENT = re.compile(
    r"did not answer for (?P<seconds>\d+) s: the Docker engine at (?P<url>\S+(?: socket)?) does not answer "
    r"\((?P<cause>.+)\)"
)
# clusters.executors.plain_errors' words for why an engine does not answer
PLAIN_CAUSES: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(r"connection refused: nothing listens there"), _("connection refused: nothing listens there")),
    (re.compile(r"timed out after (?P<seconds>[\d.]+) s"), _("timed out after %(seconds)s s")),
    (re.compile(r"its host name does not resolve"), _("its host name does not resolve")),
    (re.compile(r"no route to the host"), _("no route to the host")),
    (re.compile(r"its network is unreachable"), _("its network is unreachable")),
    (re.compile(r"no socket at that path"), _("no socket at that path")),
    (re.compile(r"permission denied"), _("permission denied")),
    (re.compile(r"the connection was closed before an answer"), _("the connection was closed before an answer")),
    (re.compile(r"it answered HTTP (?P<code>\d+)(?P<rest>.*)"), _("it answered HTTP %(code)s%(rest)s")),
]


def _down_why(why: str) -> str:
    silent = ENGINE_SILENT.fullmatch(why)
    if silent is None:
        return why
    cause = silent["cause"]
    for pattern, template in PLAIN_CAUSES:
        if match := pattern.fullmatch(cause):
            cause = str(template) % match.groupdict() if match.groupdict() else str(template)
            break
    values = {"seconds": silent["seconds"], "url": silent["url"], "cause": cause}
    return str(_("did not answer for %(seconds)s s: the Docker engine at %(url)s does not answer (%(cause)s)")) % values


WAITS_FOR_DOWN = re.compile(
    r"(?P<why>.+) while (?:node (?P<node>\S+) is down \(it waits for it\)|nodes (?P<nodes>.+) are down "
    r"\(it waits for them\))"
)
_LAST_PARENTHESES = re.compile(r"\s*[(\uff08][^()\uff08\uff09]*[)\uff09]$")


def _waits_for_down(waits: re.Match[str]) -> str:
    """`<a never-fits reason, its "(it can never fit)" left out> while node b is down (it waits for it)`."""
    why = waits["why"]
    shown = _reason_part(why + " (it can never fit)")
    why = _LAST_PARENTHESES.sub("", shown) if shown != why + " (it can never fit)" else why
    if waits["node"]:
        return str(_("%(why)s while node %(node)s is down (it waits for it)")) % {"why": why, "node": waits["node"]}
    return str(_("%(why)s while nodes %(nodes)s are down (it waits for them)")) % {"why": why, "nodes": waits["nodes"]}


def _reason_part(part: str) -> str:
    if part.startswith(LEFT_OVER):
        return str(_("the task left over: %(why)s")) % {"why": _reason_part(part.removeprefix(LEFT_OVER))}
    if (busy := BUSY.fullmatch(part)) is not None:
        return str(_("busy: other jobs' tasks hold %(nodes)s")) % busy.groupdict()
    if (waits := WAITS_FOR_DOWN.fullmatch(part)) is not None:
        return _waits_for_down(waits)
    if (down := NODE_DOWN.fullmatch(part)) is not None:
        return str(_("node %(node)s is down (%(why)s)")) % {"node": down["node"], "why": _down_why(down["why"])}
    if part.endswith(NO_LENDER):
        return _reason_part(part.removesuffix(NO_LENDER)) + "; " + str(_("no lending VC has that much idle quota"))
    if (preempted := PREEMPTED_NOTE.fullmatch(part)) is not None:
        return str(_("Preempted by job %(job)s of VC %(vc)s")) % preempted.groupdict()
    if PREEMPTED_BY_HIGHER.fullmatch(part):
        return str(_("Preempted by a job of a higher class"))
    if WAITING_TO_RUN_AGAIN.fullmatch(part):
        return str(_("waiting to run again."))
    if (slurm := _slurm_reason(part)) is not None:
        return slurm
    behind = WAITING_BEHIND.fullmatch(part)
    if behind:
        values = {"job": behind["job"], "vc": behind["vc"], "why": _reason_part(behind["why"])}
        if behind["order"] == "fair share":
            return str(_("waiting behind job %(job)s, first in VC %(vc)s (fair share): %(why)s")) % values
        return str(_("waiting behind job %(job)s, first in VC %(vc)s (FIFO): %(why)s")) % values
    for pattern, template in REASONS:
        match = pattern.fullmatch(part)
        if match:
            values = match.groupdict()
            if "what" in values:  # "GPUs" / "CPUs" after a count: in Chinese with its measure word
                values["what"] = str(COUNTED.get(values["what"], values["what"]))
            return str(template) % values if values else str(template)
    return part


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
    if (slurm := _slurm_reason(text)) is not None:  # (a job Slurm refused: its reason is the diagnostics)
        return slurm
    for pattern, template in DIAGNOSTICS:
        text = pattern.sub(_shown_in(template), text)
    return text


def _shown_in(template: Promise) -> Callable[[re.Match[str]], str]:
    def shown(match: re.Match[str]) -> str:
        return str(template) % match.groupdict() if match.groupdict() else str(template)

    return shown


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
