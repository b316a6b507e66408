"""Process tasks with the real scheduler (tests/scheduler) for the training-metrics tests."""

from tests.scheduler.conftest import process_node, run_until, scheduler, submit

__all__ = ["process_node", "run_until", "scheduler", "submit"]
