"""The one door to the nodes' executors: every phase gets a node's executor here, so a test or a
bench can put another in front of all of them at once (`executors.node_executor = ...`).

Callers look the function up on this module at call time (`executors.node_executor(node)`), not
by `from ... import`, for that reason. The registry behind it keeps one executor per node.
"""

from __future__ import annotations

from clusters.executors.base import Executor
from clusters.executors.registry import executor_for
from clusters.models import Node


def node_executor(node: Node) -> Executor:
    return executor_for(node.executor, node.address, node.docker_url)


def ping(node: Node) -> str | None:
    """None when the node's backend answers, else why not (on a pool thread)."""
    try:
        node_executor(node).ping()
    except Exception as exc:
        return str(exc)
    return None
