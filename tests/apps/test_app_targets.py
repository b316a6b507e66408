"""Where the proxy reaches an app (clusters/executors/app_ports.py): never the node's shared address
where the portal's machine reaches the task some other way; the real paths are tried in
tests/multinode/test_app_isolation.py and tests/security/test_process_network.py."""

from __future__ import annotations

import ipaddress

from clusters.executors.app_ports import APP_ADDRESSES, app_host, job_app_address

NODE = "10.0.0.5"


def test_a_process_tasks_app_is_at_its_jobs_own_loopback_address():
    assert app_host("process", "", NODE, NODE, 42) == job_app_address(42) == "127.128.0.43"


def test_every_job_address_is_a_host_of_the_apps_loopback_range():
    for job_id in (0, 1, APP_ADDRESSES.num_addresses - 3, APP_ADDRESSES.num_addresses - 2, 10**9):
        address = ipaddress.ip_address(job_app_address(job_id))
        assert address in APP_ADDRESSES and address not in (APP_ADDRESSES[0], APP_ADDRESSES[-1])


def test_a_container_on_its_jobs_network_on_the_portals_engine_is_at_its_own_address():
    assert app_host("docker", "", NODE, "10.213.4.2", 42) == "10.213.4.2"


def test_a_container_elsewhere_or_on_the_nodes_network_is_at_the_nodes_address():
    assert app_host("docker", "tcp://10.0.0.5:2375", NODE, "10.213.4.2", 42) == NODE
    assert app_host("docker", "", NODE, NODE, 42) == NODE  # (a job that spans nodes)
    assert app_host("slurm", "", NODE, NODE, 42) == NODE
