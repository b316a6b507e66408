"""The interfaces a task's NCCL, Gloo and OpenMPI are told to use (clusters.executors.interfaces)."""

import pytest

from clusters.executors.docker import public_environment
from clusters.executors.interfaces import covering_network, interface_variables

JOB_ADDRESSES = {"PAI_HOST_IP_worker_0": "10.251.7.2", "PAI_HOST_IP_worker_1": "10.251.7.3"}


def test_it_gives_a_task_on_its_job_network_that_networks_interface(make_launch):
    env = public_environment(make_launch("true", env=dict(JOB_ADDRESSES)))
    assert [env[name] for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")] == ["eth0", "eth0"]
    assert [env[name] for name in ("OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_btl_tcp_if_include")] == ["eth0", "eth0"]


def test_it_gives_openmpi_on_the_nodes_networks_the_jobs_task_addresses(make_launch):
    env = public_environment(make_launch("true", env=dict(JOB_ADDRESSES), host_network=True))
    assert env["OMPI_MCA_btl_tcp_if_include"] == "10.251.7.2/31"
    assert env["OMPI_MCA_oob_tcp_if_include"] == "10.251.7.2/31"
    assert "NCCL_SOCKET_IFNAME" not in env  # (NCCL and Gloo find the node's interface themselves)


def test_it_lets_a_jobs_own_openmpi_interfaces_win(make_launch):
    env = {**JOB_ADDRESSES, "OMPI_MCA_btl_tcp_if_include": "ib0"}
    assert public_environment(make_launch("true", env=env, host_network=True))["OMPI_MCA_btl_tcp_if_include"] == "ib0"


@pytest.mark.parametrize(
    ("addresses", "network"),
    [
        (["10.251.7.2", "10.251.7.3"], "10.251.7.2/31"),
        (["10.0.0.5", "10.0.1.7", "10.0.0.9"], "10.0.0.0/23"),
        (["10.0.0.5", "10.0.0.5"], None),  # (one address: OpenMPI reads /32 as every interface)
        (["10.0.0.5", "192.168.1.5"], None),  # (nothing in common: no use)
        (["10.0.0.5", "fd00::1", "worker-1"], None),
    ],
)
def test_it_finds_the_smallest_network_holding_the_jobs_addresses(addresses, network):
    assert covering_network(addresses) == network


def test_it_names_a_process_tasks_own_namespace_interface_for_every_library():
    chosen = interface_variables(dict(JOB_ADDRESSES), "eth0")
    assert chosen == dict.fromkeys(
        ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_btl_tcp_if_include"),
        "eth0",
    )


def test_it_gives_openmpi_in_a_slurm_step_on_the_nodes_network_the_jobs_task_addresses():
    assert interface_variables(dict(JOB_ADDRESSES), None) == dict.fromkeys(
        ("OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_btl_tcp_if_include"), "10.251.7.2/31"
    )
