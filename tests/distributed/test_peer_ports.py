"""How a process task's peer ports become its network namespace's ephemeral ports
(clusters.executors.netns) and how its SSH runtime is put before its script (process.py)."""

import subprocess

from clusters.executors.netns import TaskNetwork, ephemeral_port_sysctls, port_runs
from clusters.executors.process import ansi_c_quoted


def test_it_groups_ports_into_runs():
    assert port_runs([20005, 20001, 20002, 20003, 20009]) == [(20001, 20003), (20005, 20005), (20009, 20009)]


def test_it_makes_contiguous_peer_ports_the_ephemeral_range():
    assert ephemeral_port_sysctls(list(range(20010, 20074))) == {"net/ipv4/ip_local_port_range": "20010 20073"}


def test_it_reserves_the_ports_between_peer_ports_that_are_not_the_tasks():
    sysctls = ephemeral_port_sysctls([20010, 20011, 20015, 20020])
    assert sysctls == {
        "net/ipv4/ip_local_port_range": "20010 20020",
        "net/ipv4/ip_local_reserved_ports": "20012-20014,20016-20019",
    }


def test_it_sets_no_sysctl_for_a_task_without_peer_ports():
    assert TaskNetwork().plan("10.1.0.5", {"ssh": [20001]}, (1000, 1000))["sysctls"] == {}


def test_it_forwards_port_runs_to_pasta_at_the_node_address():
    plan = TaskNetwork().plan("10.1.0.5", {"ssh": [20001], "peers": [20002, 20003, 20004]}, (1000, 1000))
    args = plan["pasta"]
    assert [args[i + 1] for i, arg in enumerate(args) if arg == "--tcp-ports"] == ["10.1.0.5/20001-20004"]


def test_it_quotes_any_text_as_one_bash_word_on_one_line():
    text = "a 'quoted' \\ back\nslash\r\n$HOME `x`"
    quoted = ansi_c_quoted(text)
    assert "\n" not in quoted
    said = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True).stdout
    assert said.decode() == text
