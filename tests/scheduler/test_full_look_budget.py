"""A pass inspects in full (every task of a node whose event stream cannot vouch for every exit)
at most FULL_LOOK_TASKS tasks beyond its first node's; the other nodes' full looks wait for a later
pass, their streams' exits still handled, and the nodes take turns going first."""

import json
from types import SimpleNamespace

import pytest

from clusters.executors.docker_events import ExitWatch
from scheduling import ending


class Watched:
    """A node's executor as the ending phase asks it: a full look always due (as right after its
    stream opened), and the exits its stream saw."""

    def __init__(self, saw: set[str]) -> None:
        self.saw = saw
        self.looked_in_full = 0

    def exits_seen(self, may_look_in_full: bool = True) -> set[str] | None:
        if may_look_in_full:
            self.looked_in_full += 1
            return None
        return self.saw


@pytest.fixture
def cluster(monkeypatch):
    """Four nodes of 300 running tasks each; on each, task 0 has an exit its stream saw."""
    executors = {node_id: Watched({f"c{node_id}-0"}) for node_id in range(1, 5)}
    nodes = {node_id: SimpleNamespace(pk=node_id, name=f"n{node_id}") for node_id in executors}
    running = [(node_id * 1000 + i, f"c{node_id}-{i}", "", node_id) for node_id in nodes for i in range(300)]
    monkeypatch.setattr(ending.executors, "node_executor", lambda node: executors[node.pk])
    monkeypatch.setattr(ending, "FULL_LOOK_TASKS", 500)
    return SimpleNamespace(executors=executors, nodes=nodes, running=running)


def test_it_inspects_in_full_no_more_nodes_than_the_pass_allows(cluster):
    polled, in_full = ending._may_have_ended(cluster.running, cluster.nodes)
    looked = [n for n, executor in cluster.executors.items() if executor.looked_in_full]
    assert len(looked) == 2  # 300 tasks, then 300 more while 200 of the 500 were left
    assert in_full == set(looked)
    assert len(polled) == 2 * 300 + 2  # ... and the others' exits their streams saw


def test_it_gives_every_node_its_full_look_in_turn(cluster):
    for _ in range(4):
        ending._may_have_ended(cluster.running, cluster.nodes)
    assert all(executor.looked_in_full for executor in cluster.executors.values())


def test_it_puts_off_a_due_full_look_and_hands_over_the_exits_its_stream_saw():
    watch = ExitWatch("ssh://nowhere", "pai", "pai.portal")  # (never followed: a full look always due)
    watch._note(json.dumps({"Action": "die", "Actor": {"ID": "abc"}}).encode())
    assert watch.seen(may_look_in_full=False) == {"abc"}
    assert watch.seen(may_look_in_full=False) == set()


def test_it_keeps_a_put_off_full_look_due_until_it_is_allowed():
    watch = ExitWatch("ssh://nowhere", "pai", "pai.portal")
    watch.seen(may_look_in_full=False)
    assert watch.seen(may_look_in_full=True) is None


class Listed:
    """A node's executor whose listing vouches for some of its running tasks (or none: None)."""

    def __init__(self, vouched: set[str] | None) -> None:
        self.vouched = vouched
        self.polled: list[str] = []

    def running_listed(self) -> set[str] | None:
        return self.vouched

    def poll(self, handle):
        self.polled.append(handle.executor_id)
        return ending.TaskStatus(running=handle.executor_id != "c2", exit_code=0)


class Node:  # (a node as the phase keys its calls by: hashable)
    pk, name, executor, address, docker_url = 1, "n1", "docker", "", ""


def polled_on(executor, monkeypatch, *, in_full: bool) -> list[str]:
    node = Node()
    monkeypatch.setattr(ending.executors, "node_executor", lambda node: executor)
    rows = [(i, f"c{i}", "", 1) for i in range(4)]
    answers = dict(ending._polled(rows, {1} if in_full else set(), {1: node}))  # type: ignore[dict-item]
    assert [row[1] for row, status in answers.items() if not status.running] == ["c2"]
    return executor.polled


def test_it_polls_only_the_tasks_a_full_looks_listing_does_not_vouch_for(monkeypatch):
    assert polled_on(Listed({"c0", "c1", "c3"}), monkeypatch, in_full=True) == ["c2"]


def test_it_polls_every_task_of_a_full_look_whose_listing_vouches_for_none(monkeypatch):
    assert polled_on(Listed(None), monkeypatch, in_full=True) == ["c0", "c1", "c2", "c3"]
