# ruff: noqa: RUF001  (Chinese text has its own punctuation)
"""Exit diagnostics in the page's language (issues 36, 45): rendered by their codes, the exit spec's
reason by its exact text and the portal's own sentences by theirs; the phrase, what an engine said
and the log's line stay as said; a row older than its codes shows its English."""

import pytest
from django.utils import translation

from catalogue import Message
from clusters.slurm.exits import status_after
from jobs.protocol.exitspec import classify
from web.templatetags.portal import diagnostics_text


def in_chinese(message: Message) -> str:
    with translation.override("zh-hans"):
        return diagnostics_text(message.as_dict(), message.text)


@pytest.mark.parametrize(
    ("message", "chinese"),
    [
        (
            Message.of("exit.exited", phrase="PAIRuntimeUserStop", said=Message.of("exit.stopped_by_user")),
            "PAIRuntimeUserStop: 应用户请求而停止。",
        ),
        (
            Message.of(
                "exit.exited",
                phrase="PAIRuntimeUserStop",
                said=Message.of("exit.stopped_because", why=Message.of("exit.stop.idle", app="jupyter", minutes="30")),
            ),
            "PAIRuntimeUserStop: 因jupyter 空闲 30 分钟而停止。",
        ),
        (
            Message.of("exit.task", task="worker-0", diagnostics=Message.of("exit.out_of_memory", mb=256)),
            "worker-0: 因内存不足被终止（任务的上限为 256 MB，即 memoryMB）",
        ),
        (Message.of("exit.container_gone", id="0123456789ab"), "任务的容器 0123456789ab 已不存在（在门户之外被删除）"),
        (
            Message.of("exit.engine_silent", url="tcp://10.0.0.2:2375", cause="Connection refused"),
            "节点的 Docker 引擎（tcp://10.0.0.2:2375）没有响应：Connection refused",
        ),
        (Message.of("exit.slurm.time_limit"), "Slurm 在作业的时间上限（--time）处结束了它"),
    ],
)
def test_it_shows_the_portals_own_diagnostics_in_chinese(message, chinese):
    assert in_chinese(message) == chinese


def test_it_shows_the_exit_specs_reason_in_chinese_by_its_exact_text():
    info = classify(7)  # an unknown user failure: the spec's reason, and the command's own code
    shown = in_chinese(Message.of("exit.exited", phrase=info.phrase, said=info.reason))
    assert shown.startswith("PAIRuntimeUnknownFailed: ") and "（命令的退出码为 7）" in shown, shown
    assert info.reason.text not in shown


def test_it_shows_a_slurm_jobs_end_in_chinese():
    status = status_after("NODE_FAIL")
    assert (
        in_chinese(Message.of("exit.exited", phrase="PodNodeLost", said=status.diagnostics))
        == "PodNodeLost: Slurm：一个节点出现故障"
    )


def test_it_leaves_english_diagnostics_as_they_were():
    message = Message.of("exit.exited", phrase="PAIRuntimeUserStop", said=Message.of("exit.stopped_by_user"))
    with translation.override("en"):
        shown = diagnostics_text(message.as_dict(), message.text)
    assert shown == "PAIRuntimeUserStop: stopped at the user&#x27;s request."  # (HTML: its text escaped)


def test_it_shows_a_row_older_than_its_codes_as_it_was_stored():
    with translation.override("zh-hans"):
        assert diagnostics_text({}, "PAIRuntimeUserStop: stopped at the user's request.") == (
            "PAIRuntimeUserStop: stopped at the user's request."
        )


def test_it_marks_the_quoted_log_line_as_the_logs_own():
    said = Message.of(
        "exit.log_says",
        said=Message.of("exit.spec_reason", spec_reason="User command is invalid"),
        line="bash: <not found>",
    )
    shown = in_chinese(Message.of("exit.exited", phrase="UserCommandExitWithError", said=said))
    assert shown.endswith('；日志中是：<span translate="no">bash: &lt;not found&gt;</span>'), shown


def test_it_escapes_what_an_engine_said_and_marks_it_as_its_own():
    shown = in_chinese(
        Message.of("exit.exited", phrase="ContainerStartFailed", said=Message.of("exit.said", said="<b>no</b>"))
    )
    assert shown == 'ContainerStartFailed: <span translate="no">&lt;b&gt;no&lt;/b&gt;</span>'


@pytest.mark.django_db
def test_the_page_of_a_job_whose_start_found_its_port_taken_says_why_in_chinese(
    alice_client, user, default_vc, settings
):
    """The zh-Hans walk found such a page in English: the executor's refusal is the portal's own
    sentence, by its code, carried by the ExecutorError to the stored diagnostics; only what the
    kernel said stays as it said it."""
    from clusters.executors.base import ExecutorError, Failure
    from clusters.models import Node
    from jobs.models import JobState, TaskState
    from scheduling import ending
    from scheduling.backends import Backends
    from scheduling.starting import NodeTrouble, Starter
    from tests.factories import create_job

    settings.LANGUAGE_CODE = "zh-hans"
    settings.PAI_MAX_TRANSIENT_RETRIES = 0  # (else placed again, that port avoided)
    node = Node.objects.create(name="n1", executor="process", cpus=8, memory_mb=8192)
    job = create_job(user, "duankou", state=JobState.RUNNING, job_attempt=1)
    job.tasks.update(state=TaskState.RUNNING, node=node, attempt=1, ports={"http": [20000]})
    taken = Message.of("exit.start.port_held", port=20000, address="127.0.0.2", said="Address already in use")
    failed_starts: list = []
    Starter(NodeTrouble(), failed_starts).failed(
        job, job.tasks.select_related("node").get(), ExecutorError(taken, Failure.PORT_CONFLICT)
    )
    ending.run(Backends(), failed_starts, set())
    job.refresh_from_db()
    page = alice_client.get("/jobs/alice~duankou/").content.decode()
    assert job.state == JobState.FAILED and "held by another program" in job.exit_diagnostics
    assert "127.0.0.2 上的端口 20000 被另一个程序占用" in page and "held by another program" not in page
    assert '<span translate="no">Address already in use</span>' in page


@pytest.mark.django_db
def test_the_job_page_and_the_admin_show_a_jobs_diagnostics_in_the_readers_language(
    alice_client, admin_client, user, default_vc, settings
):
    from jobs import lifecycle
    from jobs.protocol.dependencies import never_reason
    from tests.factories import create_job

    settings.LANGUAGE_CODE = "zh-hans"
    job = create_job(user, "yilai")
    lifecycle.refuse(job, -1100, never_reason("afterok", "alice~prep", "FAILED"))
    for page in (
        alice_client.get("/jobs/alice~yilai/").content.decode(),
        admin_client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode(),
    ):
        assert "其依赖永远无法满足：作业 alice~prep 以 FAILED 结束" in page and "can never be met" not in page
