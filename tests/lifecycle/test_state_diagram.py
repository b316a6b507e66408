"""The state diagram in docs/architecture.md is jobs/states.py's data, drawn by `manage.py
statediagram --write`, never by hand."""

from io import StringIO

import pytest
from django.core.management import call_command

from jobs.management.commands.statediagram import architecture_doc, with_diagram
from jobs.states import JOB_TRANSITIONS, TASK_TRANSITIONS, state_diagram


def test_it_shows_in_the_architecture_doc_exactly_the_diagram_of_the_data():
    doc = architecture_doc().read_text()
    assert with_diagram(doc) == doc, "docs/architecture.md is out of date: run `manage.py statediagram --write`"


def test_it_draws_one_line_per_allowed_move():
    lines = state_diagram().splitlines()
    for transitions in (JOB_TRANSITIONS, TASK_TRANSITIONS):
        for name, (from_states, to_state) in transitions.items():
            for state in from_states:
                assert [state, f"--{name}-->", to_state] in [line.split() for line in lines]
    moves = sum(
        len(from_states)
        for transitions in (JOB_TRANSITIONS, TASK_TRANSITIONS)
        for from_states, _ in transitions.values()
    )
    assert len(lines) == moves + 2  # and the two headings


def test_it_prints_the_diagram():
    out = StringIO()
    call_command("statediagram", stdout=out)
    assert out.getvalue() == state_diagram()


def test_it_refuses_to_write_into_a_doc_without_its_markers():
    with pytest.raises(ValueError, match="markers"):
        with_diagram("# a doc\n")
