"""The exit spec: every way a task ends maps to one row of exit_spec.yaml (OpenPAI's table)."""

import pytest

from jobs.protocol import exitspec
from jobs.protocol.exitspec import classify, exit_info, spec_row

DESIGN_TABLE_CODES = """0 -210 -220 -1000 -1001 -1200 -1201 -1202 -1203 -1204
    130 131 132 134 135 136 137 139 141 143 220 249 251 253 254 255 256 -8000"""


def test_it_maps_a_clean_exit_to_succeeded():
    info = classify(0)
    assert (info.code, info.phrase, info.type, info.user_code) == (0, "Succeeded", "USER_SUCCESS", 0)
    assert info.succeeded


def test_it_maps_a_stop_request_to_stop_framework_requested_whatever_the_exit():
    info = classify(143, stopped=True)
    assert (info.code, info.phrase, info.type, info.behaviour) == (
        -210,
        "StopFrameworkRequested",
        "USER_STOP",
        "permanent",
    )
    assert info.user_code == 143


def test_it_accepts_a_stop_without_any_exit_code():
    assert classify(None, stopped=True).code == -210


def test_it_maps_an_oom_kill_to_a_permanent_user_failure():
    info = classify(137, oom_killed=True)
    assert (info.code, info.phrase, info.type, info.behaviour) == (
        -1200,
        "UserContainerDockerOOMKilled",
        "USER_FAILURE",
        "permanent",
    )
    assert info.user_code == 137


@pytest.mark.parametrize("signal_exit", [130, 131, 137, 143])
def test_it_retries_signal_kills_by_the_platform_as_transient(signal_exit):
    info = classify(signal_exit)
    assert (info.code, info.type, info.behaviour) == (signal_exit, "PLATFORM_FAILURE", "transient")


@pytest.mark.parametrize("signal_exit", [132, 135, 136, 141])
def test_it_never_retries_signals_caused_by_the_program(signal_exit):
    info = classify(signal_exit)
    assert (info.code, info.type, info.behaviour) == (signal_exit, "USER_FAILURE", "permanent")


@pytest.mark.parametrize("signal_exit", [134, 139])
def test_it_retries_abort_and_segfault_up_to_the_count(signal_exit):
    info = classify(signal_exit)
    assert (info.code, info.type, info.behaviour) == (signal_exit, "UNKNOWN_FAILURE", "unknown")


def test_it_reads_a_popen_negative_signal_status_as_the_shell_would():
    info = classify(-9)
    assert (info.code, info.phrase, info.user_code) == (137, "ContainerSigKillReceived", -9)


def test_it_maps_command_not_found_in_the_log_to_220():
    info = classify(127, log_tail="bash: line 1: tensorflw: command not found\n")
    assert (info.code, info.phrase, info.behaviour, info.user_code) == (
        220,
        "UserCommandExitWithError",
        "permanent",
        127,
    )


def test_it_needs_the_log_line_as_well_as_127_for_220():
    assert classify(127, log_tail="Traceback ...").code == 255


@pytest.mark.parametrize("user_exit", [1, 2, 42, 126, 254])
def test_it_maps_any_other_user_exit_to_255_and_keeps_the_users_code(user_exit):
    info = classify(user_exit)
    assert (info.code, info.phrase, info.behaviour, info.user_code) == (
        255,
        "PAIRuntimeUnknownFailed",
        "unknown",
        user_exit,
    )
    assert f"code {user_exit}" in info.reason.text


def test_it_takes_a_platform_failure_over_the_process_status():
    info = classify(None, platform_exit_code=-1001)
    assert (info.code, info.phrase, info.behaviour) == (-1001, "PodNodeLost", "transient")


@pytest.mark.parametrize(
    ("platform_code", "behaviour"),
    [
        (-1000, "transient"),
        (-1201, "unknown"),
        (-1203, "permanent"),
        (251, "transient"),
        (253, "transient"),
        (254, "permanent"),
        (249, "permanent"),
    ],
)
def test_it_gives_platform_codes_their_spec_behaviour(platform_code, behaviour):
    assert classify(1, platform_exit_code=platform_code).behaviour == behaviour


def test_it_explains_an_unknown_positive_platform_code_with_the_fallback_row_and_keeps_it():
    info = classify(None, platform_exit_code=300)
    assert (info.code, info.phrase, info.behaviour) == (300, "PAIRuntimeExitAbnormally", "unknown")


def test_it_explains_an_unknown_negative_code_with_the_fallback_row_and_keeps_it():
    info = classify(None, platform_exit_code=-4242)
    assert (info.code, info.phrase, info.behaviour) == (-4242, "ContainerUndefinedNegativeExitCode", "unknown")


def test_it_explains_a_status_above_255_with_the_positive_fallback():
    info = classify(300)
    assert (info.code, info.phrase) == (300, "PAIRuntimeExitAbnormally")


def test_it_treats_a_missing_exit_code_as_an_undefined_one():
    info = classify(None)
    assert (info.code, info.behaviour) == (-8000, "unknown")


def test_it_explains_a_recorded_code_without_remapping_it():
    assert exit_info(220).phrase == "UserCommandExitWithError"
    assert exit_info(254).behaviour == "permanent"
    assert exit_info(-1200, user_code=137).user_code == 137


def test_spec_row_has_openpai_app_exit_spec_fields():
    row = spec_row(137)
    assert row["code"] == 137
    assert row["phrase"] == "ContainerSigKillReceived"
    assert row["type"] == "PLATFORM_FAILURE"
    assert row["behavior"] == "TRANSIENT"
    assert row["reaction"] == "ALWAYS_RETRY"
    assert row["reason"] == "Container killed by OS Signal: SIGKILL"
    assert row["solution"] == ["Wait result from next retry", "Contact Cluster Admin"]


def test_spec_row_keeps_the_raw_code_of_an_unknown_one():
    row = spec_row(-4242)
    assert (row["code"], row["phrase"]) == (-4242, "ContainerUndefinedNegativeExitCode")


def test_every_row_of_the_design_table_is_in_the_data_file():
    design_codes = {int(code) for code in DESIGN_TABLE_CODES.split()}
    assert design_codes <= set(exitspec._rows())


def test_every_row_says_what_to_do_with_a_retry():
    for row in exitspec._rows().values():
        assert row["behaviour"] in {"transient", "permanent", "unknown"}
        assert row["phrase"] and row["type"] and row["reason"]


def test_the_data_file_sits_beside_the_module():
    assert exitspec.SPEC_PATH.parent == __import__("pathlib").Path(exitspec.__file__).parent


def test_it_has_a_spec_row_for_every_exit_code_member():
    from jobs.protocol.exitspec import ExitCode, _rows

    assert {int(code) for code in ExitCode} == set(_rows())
