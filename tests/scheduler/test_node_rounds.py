"""The scheduler's look at every node costs queries by the round, not by the node: the reconcile
after a start reads every node's tasks at once, and a heartbeat round reads whole only the nodes
due for a ping (at 2,000 GPUs a reconcile was 750 queries, 3 a node, and each round read all 250
nodes to ping a tenth of them)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clusters.models import Node
from scheduling import executors, nodes
from scheduling.backends import Backends

pytestmark = pytest.mark.django_db


def add_nodes(count: int) -> None:
    start = Node.objects.count()
    Node.objects.bulk_create(
        Node(name=f"n{start + i}", address=f"10.0.0.{start + i + 1}", cpus=8, memory_mb=8192) for i in range(count)
    )


def queries_of(call) -> int:
    with CaptureQueriesContext(connection) as seen:
        call()
    return len(seen)


def test_it_reconciles_every_node_in_the_same_number_of_queries_however_many_there_are(quiet_engines):
    add_nodes(3)
    few = queries_of(lambda: nodes.reconcile(Backends()))
    add_nodes(9)
    assert queries_of(lambda: nodes.reconcile(Backends())) == few


def lane_of(name: str) -> executors.Lane:
    lane = executors.lane_of(Node.objects.get(name=name))
    assert lane is not None
    return lane


@pytest.fixture
def pinged_on_a_clock(quiet_engines, settings, monkeypatch):
    """A heartbeat over nodes n0..n3 on a clock of the test's (clock[0]), the names it pinged."""
    settings.PAI_NODE_HEARTBEAT_SECONDS = 10.0
    add_nodes(4)
    clock = [1000.0]
    monkeypatch.setattr(nodes.time, "monotonic", lambda: clock[0])
    pinged: list[str] = []
    monkeypatch.setattr(executors, "ping", lambda node: pinged.append(node.name))
    return nodes.Heartbeat(), clock, pinged


def test_it_reads_only_the_node_ids_in_a_heartbeat_round_with_no_node_due(pinged_on_a_clock):
    heartbeat, clock, pinged = pinged_on_a_clock
    heartbeat.check(Backends())
    assert sorted(pinged) == ["n0", "n1", "n2", "n3"]  # (the first round: every node)
    clock[0] += 1.0  # (the next round: each node's next ping is 5-10 s after its first)
    with CaptureQueriesContext(connection) as seen:
        assert heartbeat.check(Backends()) is False
    assert len(pinged) == 4
    assert len(seen) == 1 and '"clusters_node"."address"' not in seen[0]["sql"]  # (the ids, no node read whole)


def test_it_pings_no_node_whose_engine_answered_a_call_lately(pinged_on_a_clock):
    heartbeat, clock, pinged = pinged_on_a_clock
    heartbeat.check(Backends())
    clock[0] += 10.0  # (every node due again)
    lane_of("n1").last_answer = clock[0] - 1.0  # (a poll it answered)
    pinged.clear()
    heartbeat.check(Backends())
    assert sorted(pinged) == ["n0", "n2", "n3"]


def test_it_still_pings_a_node_that_answered_lately_but_has_a_clean_up_to_reconcile(pinged_on_a_clock):
    heartbeat, clock, pinged = pinged_on_a_clock
    heartbeat.check(Backends())
    clock[0] += 10.0
    lane = lane_of("n1")
    lane.last_answer, lane.missed_cleanup = clock[0] - 1.0, True
    pinged.clear()
    heartbeat.check(Backends())
    assert "n1" in pinged
