"""OpenPAI's runtime failure patterns (221-235) and the common Python/PyTorch ones: the end of a
failed task's log gives OpenPAI's code, its phrase and the line that says why."""

import time

import pytest
import yaml

from jobs.protocol import exitspec
from jobs.protocol.exitspec import classify, match_log, pattern_names, recorded_match
from tests.exitspec.samples import CUDA_OOM, MISSING_MODULE, NCCL_TIMEOUT, SAMPLES

OPENPAI_CODES = """0 -100 -101 -110 -111 -120 -200 -210 -220 -230 -300 -310 -1000 -1001 -1002 -1003 -1004 -1005
    -1006 -1100 -1300 -1200 -1201 -1202 -1203 -1204 -1205 128 130 131 132 134 135 136 137 139 141 143 220 221 222
    223 224 225 226 228 229 230 231 232 233 234 235 249 250 251 252 253 254 255 -8000 256"""


def test_it_has_all_62_of_openpais_codes():
    codes = {int(code) for code in OPENPAI_CODES.split()}
    assert len(codes) == 62
    assert codes <= set(exitspec._rows())


@pytest.mark.parametrize(("name", "status", "log", "code"), SAMPLES, ids=[f"{s[0]}-{s[3]}" for s in SAMPLES])
def test_it_maps_a_log_pattern_to_openpais_code(name, status, log, code):
    info = classify(status, log_tail="step 40 loss 0.31\n" + log)
    assert (info.code, info.user_code) == (code, status)
    assert info.phrase == exitspec._rows()[code]["phrase"]
    assert info.match is not None and info.match.name == name and info.match.line


def test_every_named_pattern_has_a_sample():
    assert set(pattern_names()) == {name for name, *_ in SAMPLES}


def test_it_keeps_the_line_a_cuda_oom_matched():
    info = classify(1, log_tail=CUDA_OOM)
    assert (info.code, info.phrase) == (226, "ContainerCudaOOMKilled")
    assert info.match is not None
    assert info.match.line.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB")


def test_it_names_the_missing_module():
    found = match_log(1, MISSING_MODULE)
    assert found is not None and found.group("module") == "timm"


def test_a_signal_keeps_its_code_and_takes_its_rows_reason_from_the_log():
    info = classify(-6, log_tail=NCCL_TIMEOUT)
    assert info.match is not None and (info.code, info.match.name) == (134, "nccl-timeout")


def test_a_platform_signal_is_not_read_as_the_logs_error():
    """SIGTERM from the platform stays a transient 143 whatever the log printed before."""
    assert classify(143, log_tail=CUDA_OOM).code == 143


def test_a_plain_failure_without_a_known_line_stays_255():
    info = classify(1, log_tail="Traceback (most recent call last):\nValueError: bad learning rate\n")
    assert (info.code, info.match) == (255, None)


def test_command_not_found_still_needs_127():
    assert classify(1, log_tail="foo: command not found\n").code == 255


def test_it_reads_only_the_end_of_the_log():
    assert classify(1, log_tail=MISSING_MODULE + "x" * 70_000 + "\n").code == 255


def test_a_hostile_log_is_matched_quickly():
    hostile = ("AttributeError: " * 200 + "\n") * 30 + ("tensorflow ResourceExhaustedError " * 100 + "\n") * 10
    started = time.monotonic()
    classify(1, log_tail=hostile[-65536:])
    assert time.monotonic() - started < 1.0


def test_it_finds_a_recorded_codes_pattern_again():
    found = recorded_match(232, 1, MISSING_MODULE)
    assert found is not None and found.group("module") == "timm"
    assert recorded_match(255, 1, MISSING_MODULE) is None


def test_every_pattern_is_in_openpais_shape_and_bounded():
    for row in yaml.safe_load(exitspec.SPEC_PATH.read_text()):
        for pattern in (row.get("pattern") or {}).get("runtimeContainerPatterns", []):
            assert set(pattern) <= {"name", "exitCode", "userLogRegex"}
            assert ".*" not in pattern.get("userLogRegex", "")
