"""Texts the pages translate although they come from data or from the pure protocol: the exit
spec's reasons and solutions, event kinds, config errors and why a job waits."""

import ast
from pathlib import Path

import yaml
from django.utils import translation

from jobs.protocol import texts
from jobs.protocol.exitspec import SPEC_PATH
from web.error_text import translate_reason
from web.page_texts import EVENT_KINDS, EXIT_SPEC_TEXTS
from web.texts import translated

ROOT = Path(__file__).resolve().parents[2]


def test_every_reason_and_solution_of_the_exit_spec_is_marked_for_translation():
    rows = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    texts = {row["reason"] for row in rows} | {step for row in rows for step in row.get("solution") or []}
    assert texts - EXIT_SPEC_TEXTS == set()


def test_every_event_kind_written_has_a_label():
    kinds = set()
    for module in ("jobs/lifecycle.py", "jobs/actions.py"):
        for node in ast.walk(ast.parse((ROOT / module).read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if called == "event" and isinstance(kind := node.args[1], ast.Constant):
                kinds.add(kind.value)
    assert kinds - set(EVENT_KINDS) == set()


def test_it_renders_a_config_error_by_its_code_with_its_words_translated_too():
    words = texts.ALLOWED_WORDS[r"^[a-zA-Z0-9_-]+$"]()
    with translation.override("zh-hans"):
        assert translated(texts.MIN(value=100)) == "必须 ≥ 100"
        assert translated(texts.MAY_CONTAIN(words=words)) == "只能包含字母、数字、_ 和 -"
        assert translated(texts.must_be(["integer", "null"])) == "必须是整数 或 null"


def test_it_keeps_a_parsers_phrase_it_has_no_words_for_as_the_parser_said_it():
    message = texts.YAML_SYNTAX(line=1, column=2, problem=texts.parser_words("something new", texts.YAML_WORDS))
    with translation.override("zh-hans"):
        assert translated(message) == "YAML 语法错误，第 1 行第 2 列：something new"  # noqa: RUF001


def test_it_translates_why_a_job_waits_part_by_part():
    reason = (
        'waiting behind job 17, first in VC "default" (FIFO): needs 8 GPUs on one node; largest free: 4 on node-b'
        "; node gpu-2 is down (no answer)"
    )
    with translation.override("zh-hans"):
        translated = translate_reason(reason)
    for part in ("排在作业 17 之后", "需要在一个节点上有 8 个 GPU", "node-b 上 4 个", "节点 gpu-2 已宕机"):
        assert part in translated


def test_every_slurm_reason_and_refusal_has_a_translation():
    from clusters.slurm.reasons import REFUSALS, WORDS
    from web.error_text import SLURM_REFUSALS, SLURM_WORDS

    assert (set(WORDS) ^ set(SLURM_WORDS), set(REFUSALS) ^ set(SLURM_REFUSALS)) == (set(), set())


def test_it_translates_why_slurm_keeps_a_job_waiting_with_its_numbers():
    from datetime import UTC, datetime

    from clusters.slurm.reasons import Ask, PartitionUse, pending_reason
    from clusters.slurm.status import SlurmJob

    start = datetime(2026, 11, 25, 14, 39, tzinfo=UTC)
    job = SlurmJob(1, "pai-1-1", "PENDING", "Resources", start, "", "slt")
    partition = PartitionUse("slt", 3, 8, 6, 12000, 4, 2, 3000)
    reason = pending_reason(job, Ask(2, 6, 4, 2000), partition, datetime(2026, 11, 25, 14, 0, tzinfo=UTC))
    with translation.override("zh-hans"):
        translated = translate_reason(reason)
    for part in (
        "在 Slurm 中等待",
        "Slurm 正在等待分区 slt 的资源",
        "作业需要 2 个任务",
        "8 块 GPU 中 4 块",
        "预计于 2026-11-25 14:39 UTC",
    ):
        assert part in translated


def test_it_translates_the_preemption_reasons():
    with translation.override("zh-hans"):
        preempting = translate_reason(
            'preempting job(s) alice~train of VC "default" (a lower priority class) to make room for its whole '
            "gang; it starts when they have ended (their grace period at most)"
        )
        preempted = translate_reason(
            'Preempted by job alice~urgent of VC default; VC "default" quota: 4 of 8 CPUs used, job needs 6'
        )
    assert "alice~train" in preempting and "抢占" in preempting
    assert "alice~urgent" in preempted and "抢占" in preempted and "配额" in preempted


def test_it_translates_the_room_held_for_a_preemptor():
    with translation.override("zh-hans"):
        translated = translate_reason(
            "needs 2 GPUs on one node; largest free: 0; room on n1, n2 is held for job 12 (its preemption freed it)"
        )
    assert "n1, n2" in translated and "12" in translated and "room on" not in translated


def test_it_translates_the_borrowing_reasons():
    with translation.override("zh-hans"):
        reclaiming = translate_reason(
            'reclaiming VC "b"\'s quota from job(s) alice~stubborn (running on it borrowed) to make room for its '
            "whole gang; it starts when they have ended (their grace period at most)"
        )
        no_lender = translate_reason(
            'VC "a" quota: 4 of 4 CPUs used, job needs 3; no lending VC has that much idle quota'
        )
    assert "alice~stubborn" in reclaiming and "收回" in reclaiming
    assert "配额" in no_lender and "出借" in no_lender


def test_it_translates_every_dependency_reason_and_ending():
    from jobs.protocol.dependencies import KINDS, never_reason, waiting_reason
    from web.error_text import translate_diagnostics

    with translation.override("zh-hans"):
        waiting = [translate_reason(waiting_reason(kind, "alice~prep", "RUNNING")) for kind in KINDS]
        never = [
            translate_diagnostics(never_reason(kind, "alice~prep", "FAILED")) for kind in ("afterok", "afternotok")
        ]
    assert all(text.startswith("等待作业 alice~prep") for text in waiting), waiting
    assert all(text.startswith("其依赖永远无法满足\uff1a作业 alice~prep") for text in never), never
