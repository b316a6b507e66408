"""Real process-task fixtures, as the scheduler tests use them."""

from tests.scheduler.conftest import make_launch, process_node, run_until, scheduler, submit  # noqa: F401
