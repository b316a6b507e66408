"""A job's time limit (jobs.protocol.timelimit): the extra's checks, the VC's default and maximum."""

import pytest

from jobs.protocol import timelimit
from jobs.protocol.timelimit import Resolved, resolve


@pytest.mark.parametrize(("value", "seconds"), [(1, 60), (0.05, 3), (0.001, 1), (90, 5400), (1.5, 90)])
def test_it_reads_minutes_to_the_second_rounding_up(value, seconds):
    assert timelimit.asked_seconds({"maxRunTimeMinutes": value}) == seconds


@pytest.mark.parametrize("value", [0, -1, "10", True, float("inf"), float("nan"), 10**9])
def test_it_refuses_a_value_that_is_not_a_sensible_number_of_minutes(value):
    [(field, _)] = timelimit.field_errors({"maxRunTimeMinutes": value})
    assert field == "extras.maxRunTimeMinutes"


def test_it_asks_for_nothing_without_the_extra():
    assert timelimit.field_errors({}) == [] and timelimit.asked_seconds({}) is None


@pytest.mark.parametrize(
    ("asked", "default", "maximum", "expected"),
    [
        (None, None, None, Resolved(None)),
        (120, None, None, Resolved(120)),
        (None, 30, None, Resolved(1800)),
        (None, 30, 10, Resolved(600)),
        (None, None, 10, Resolved(600)),
        (600, 30, 10, Resolved(600)),
        (601, 30, 10, "asks for 10 min 1 s; its virtual cluster allows at most 10 min"),
    ],
)
def test_it_resolves_the_limit_from_the_ask_and_the_vc(asked, default, maximum, expected):
    resolved = resolve(asked, default, maximum)
    if isinstance(expected, str):  # refused: no limit, and why
        assert (resolved.seconds, resolved.error and resolved.error.text) == (None, expected)
    else:
        assert resolved == expected


@pytest.mark.parametrize(
    ("seconds", "text", "slurm"),
    [(3, "3 s", "0-00:00:03"), (3600, "1 h", "0-01:00:00"), (93784, "26 h 3 min 4 s", "1-02:03:04")],
)
def test_it_writes_a_limit_for_people_and_for_slurm(seconds, text, slurm):
    assert (timelimit.duration_text(seconds), timelimit.slurm_time(seconds)) == (text, slurm)
