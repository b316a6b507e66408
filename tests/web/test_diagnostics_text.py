# ruff: noqa: RUF001  (Chinese text has its own punctuation)
"""Exit diagnostics in the page's language (issue 36): the exit spec's words and the portal's own
sentences (a stop, an out-of-memory kill, a vanished container); what an engine said stays."""

import pytest
from django.utils import translation

from web.templatetags.portal import diagnostics_text


@pytest.mark.parametrize(
    ("english", "chinese"),
    [
        ("PAIRuntimeUserStop: stopped at the user's request.", "PAIRuntimeUserStop: 应用户请求而停止。"),
        (
            "PAIRuntimeUserStop: stopped because jupyter was idle for 30 minutes.",
            "PAIRuntimeUserStop: 因 jupyter 空闲 30 分钟而停止。",
        ),
        (
            "worker-0: killed: out of memory (the task's limit is 256 MB, memoryMB)",
            "worker-0: 因内存不足被终止（任务的上限为 256 MB，即 memoryMB）",
        ),
        (
            "the task's container 0123456789ab is gone (removed outside the portal)",
            "任务的容器 0123456789ab 已不存在（在门户之外被删除）",
        ),
        (
            "the node's Docker engine (tcp://10.0.0.2:2375) does not answer: Connection refused",
            "节点的 Docker 引擎（tcp://10.0.0.2:2375）没有响应：Connection refused",
        ),
        ("Slurm: the job reached its time limit", "Slurm：作业达到了时间上限"),
    ],
)
def test_it_shows_the_portals_own_diagnostics_in_chinese(english, chinese):
    with translation.override("zh-hans"):
        assert diagnostics_text(english) == chinese


def test_it_leaves_english_diagnostics_as_they_were(settings):
    with translation.override("en"):
        assert diagnostics_text("PAIRuntimeUserStop: stopped at the user's request.") == (
            "PAIRuntimeUserStop: stopped at the user's request."
        )


def test_it_marks_the_quoted_log_line_as_the_logs_own():
    with translation.override("zh-hans"):
        shown = diagnostics_text("UserCommandExitWithError: User command is invalid; the log says: bash: <not found>")
    assert shown.endswith('<span translate="no">bash: &lt;not found&gt;</span>')
