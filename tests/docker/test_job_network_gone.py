"""A task's job network gone before its container starts (a clean-up that a killed scheduler had
sent, finished by the engine after the network was found there; bench/chaos.py's kill phase saw
"network ...-job-N not found") is made again, on the subnet that holds the task's address, and
the task starts there."""

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.django_db]


def prepared(executor, launch_for):
    ips = executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    return launch_for("worker", 0, "exit 0", ip=ips[("worker", 0)])


def remove_network(executor, launch) -> None:
    network = executor.networks.find(executor.networks.name(launch.job_id))
    assert network is not None
    executor.api.remove_network(network["Id"])


def test_it_makes_the_job_network_again_when_it_is_gone_before_the_create(executor, launch_for, wait_exit):
    launch = prepared(executor, launch_for)
    remove_network(executor, launch)

    handle = executor.start(launch)

    assert handle.ip == launch.ip
    assert wait_exit(handle).exit_code == 0


def test_it_makes_the_job_network_again_when_it_goes_between_create_and_start(
    executor, launch_for, wait_exit, monkeypatch
):
    launch = prepared(executor, launch_for)
    real_start = executor.api.start
    calls = []

    def network_gone_first(container, *args, **kwargs):
        calls.append(container)
        if len(calls) == 1:
            remove_network(executor, launch)
        return real_start(container, *args, **kwargs)

    monkeypatch.setattr(executor.api, "start", network_gone_first)

    handle = executor.start(launch)

    assert len(calls) == 2 and handle.ip == launch.ip
    assert wait_exit(handle).exit_code == 0
    assert [c["Id"] for c in executor.api.containers(all=True, filters={"id": calls[0]})] == []


def test_it_starts_the_task_when_two_networks_bear_its_job_networks_name(executor, launch_for, wait_exit):
    """Two creates side by side (one past its deadline, still running at the engine) both made the
    network: bench/chaos.py's kill phase saw "network ...-job-N is ambiguous (2 matches found on
    name)" at every start of that job. The first one made is kept, the other removed."""
    launch = prepared(executor, launch_for)
    name = executor.networks.name(launch.job_id)
    executor.api.create_network(
        name, driver="bridge", labels={"pai.test": "duplicate"}, check_duplicate=False
    )  # a subnet the engine picks
    assert len([n for n in executor.api.networks(names=[name]) if n["Name"] == name]) == 2

    handle = executor.start(launch)

    assert handle.ip == launch.ip
    assert wait_exit(handle).exit_code == 0
    assert [n["Labels"].get("pai.test") for n in executor.api.networks(names=[name]) if n["Name"] == name] == [None]
