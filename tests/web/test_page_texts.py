"""Texts the pages translate although they come from data or from the pure protocol: the exit
spec's reasons and solutions, event kinds, config errors and why a job waits."""

import ast
from pathlib import Path

import yaml
from django.utils import translation

from catalogue import Message, joined
from jobs.protocol import texts
from jobs.protocol.exitspec import SPEC_PATH
from tests.messages import param
from web.page_texts import EVENT_KINDS, EXIT_SPEC_TEXTS
from web.reasons import reason_text
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
        assert translated(Message.of("config.min", value=100)) == "必须 ≥ 100"
        assert translated(Message.of("config.may_contain", words=words)) == "只能包含字母、数字、_ 和 -"
        assert translated(texts.must_be(["integer", "null"])) == "必须是整数 或 null"


def test_it_keeps_a_parsers_phrase_it_has_no_words_for_as_the_parser_said_it():
    message = Message.of(
        "config.yaml_syntax", line=1, column=2, problem=texts.parser_words("something new", texts.YAML_WORDS)
    )
    with translation.override("zh-hans"):
        assert translated(message) == "YAML 语法错误，第 1 行第 2 列：something new"  # noqa: RUF001


def in_chinese(reason) -> str:
    with translation.override("zh-hans"):
        return reason_text(reason)


def test_it_shows_why_a_job_waits_part_by_part_by_their_codes():
    head = [
        Message.of("reason.largest_free.gpu_on", gpus=Message.of("reason.count.gpus", count=8), most=4, node="node-b")
    ]
    reason = [
        Message.of("reason.waiting_behind.fifo", job=17, vc="default", why=head),
        Message.of("reason.node_down", node="gpu-2", why="no answer"),
    ]
    assert joined(reason) == (
        'waiting behind job 17, first in VC "default" (FIFO): needs 8 GPUs on one node; largest free: 4 on node-b'
        "; node gpu-2 is down (no answer)"
    )
    shown = in_chinese(reason)
    for part in ("排在作业 17 之后", "需要在一个节点上有 8 块 GPU", "node-b 上 4 块", "节点 gpu-2 已宕机"):
        assert part in shown, shown


def test_it_shows_a_row_older_than_its_codes_as_it_was_stored():
    assert in_chinese([]) == ""
    with translation.override("zh-hans"):
        assert reason_text([], "needs 8 GPUs") == "needs 8 GPUs"


def test_it_shows_why_slurm_keeps_a_job_waiting_with_its_numbers():
    from datetime import UTC, datetime

    from clusters.slurm.reasons import Ask, PartitionUse, pending_reason
    from clusters.slurm.status import SlurmJob

    start = datetime(2026, 11, 25, 14, 39, tzinfo=UTC)
    job = SlurmJob(1, "pai-1-1", "PENDING", "Resources", start, "", "slt")
    partition = PartitionUse("slt", 3, 8, 6, 12000, 4, 2, 3000)
    reason = pending_reason(job, Ask(2, 6, 4, 2000), partition, datetime(2026, 11, 25, 14, 0, tzinfo=UTC))
    assert (reason.code, param(reason, "sentence").code) == ("slurm.waiting_until", "slurm.reason.resources")
    shown = in_chinese([reason])
    for part in (
        "在 Slurm 中等待",
        "Slurm 正在等待分区 slt 的资源",
        "作业需要 2 个任务",
        "8 块 GPU 中 4 块",
        "预计于 2026-11-25 14:39 UTC",
    ):
        assert part in shown, shown


def test_it_shows_the_preemption_reasons():
    preempting = in_chinese([Message.of("reason.preempting", jobs=["alice~train"], vc="default")])
    preempted = in_chinese(
        [
            Message.of("reason.preempted_by", job="alice~urgent", vc="default"),
            Message.of("reason.quota.cpu", vc="default", used=4, limit=8, need=6),
        ]
    )
    assert "alice~train" in preempting and "抢占" in preempting
    assert "alice~urgent" in preempted and "抢占" in preempted and "配额" in preempted


def test_it_shows_the_room_held_for_a_preemptor():
    shown = in_chinese(
        [
            Message.of("reason.largest_free.gpu", gpus=Message.of("reason.count.gpus", count=2), most=0),
            Message.of("reason.held_room", nodes=["n1", "n2"], job=12),
        ]
    )
    assert "n1, n2" in shown and "12" in shown and "room on" not in shown


def test_it_shows_the_borrowing_reasons():
    reclaiming = in_chinese([Message.of("reason.reclaiming", vc="b", jobs=["alice~stubborn"])])
    no_lender = in_chinese(
        [Message.of("reason.quota.cpu", vc="a", used=4, limit=4, need=3), Message.of("reason.no_lender")]
    )
    assert "alice~stubborn" in reclaiming and "收回" in reclaiming
    assert "配额" in no_lender and "出借" in no_lender


def test_it_shows_every_dependency_reason_and_translates_its_ending():
    from jobs.protocol.dependencies import KINDS, never_reason
    from scheduling.dependencies import waiting_reason

    reasons = [waiting_reason(kind, "alice~prep", "RUNNING") for kind in KINDS]
    assert [reason.code for reason in reasons] == [
        "reason.dependency.afterok",
        "reason.dependency.afterany",
        "reason.dependency.afternotok",
    ]
    waiting = [in_chinese([reason]) for reason in reasons]
    never = [in_chinese([never_reason(kind, "alice~prep", "FAILED")]) for kind in ("afterok", "afternotok")]
    assert all(text.startswith("等待作业 alice~prep") for text in waiting), waiting
    assert all(text.startswith("其依赖永远无法满足\uff1a作业 alice~prep") for text in never), never


def test_the_admin_shows_why_a_job_waits_in_the_pages_language(admin_client, user, default_vc, settings):
    from tests.factories import create_job

    settings.LANGUAGE_CODE = "zh-hans"
    job = create_job(
        user, "dengdai", pending_reason=[Message.of("reason.quota.cpu", vc="default", used=8, limit=8, need=1)]
    )
    page = admin_client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()
    assert "已用 8 / 8 个 CPU" in page and "quota:" not in page


def test_the_cluster_page_and_the_dashboard_show_why_a_node_is_down_in_the_pages_language(client, admin_user, settings):
    from django.utils import timezone

    from clusters.models import Node, down_reason_fields

    settings.LANGUAGE_CODE = "zh-hans"
    reason = [
        Message.of(
            "node.silent_for",
            seconds=30,
            error=[Message.of("node.lane.silent", lane=Message.of("node.node", node="n1"), seconds=30)],
        )
    ]
    Node.objects.create(name="n1", executor="process", down_since=timezone.now(), **down_reason_fields(reason))
    client.force_login(admin_user)
    for page in ("/cluster/", "/dashboard/"):
        shown = client.get(page).content.decode()
        assert "30 秒未应答" in shown and "节点 n1 已 30 秒没有应答" in shown and "did not answer" not in shown, page


def test_a_stored_part_whose_code_is_gone_since_shows_as_it_was_stored():
    stored = [
        {"code": "reason.renamed_since", "params": {}, "message": "an old reason"},
        Message.of("reason.no_node").as_dict(),
    ]
    assert in_chinese(stored) == "an old reason; 集群中没有可调度的节点"


def test_the_job_page_shows_its_events_by_their_codes_in_the_readers_language(alice_client, user, default_vc, settings):
    from jobs import lifecycle
    from jobs.models import JobEvent
    from tests.factories import create_job

    settings.LANGUAGE_CODE = "zh-hans"
    job = create_job(user, "shijian")
    lifecycle.event(
        job.pk, "task-exit", Message.of("event.task_exited", task="<b>w-0</b>", code=1, phrase="PAIUserFailed")
    )
    JobEvent.objects.create(job=job, kind="stopped", message="An event older than its code.", params={})
    page = alice_client.get("/jobs/alice~shijian/").content.decode()
    assert '&lt;b&gt;w-0&lt;/b&gt; 已退出，退出码 1（<code class="phrase">PAIUserFailed</code>）。' in page  # noqa: RUF001
    assert "An event older than its code." in page
