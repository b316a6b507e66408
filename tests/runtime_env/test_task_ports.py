"""Which ports a task gets (issue 50): those its role declares, its plugins' (declared when the spec
is read), its sshd's and the master task's rendezvous; an undeclared `http` port only where the
job's commands read a variable that names it, as OpenPAI's seed jobs do."""

from pathlib import Path

from jobs.protocol import load
from scheduling.quota import task_requests
from tests.factories import v2_yaml

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "configs"


def labels(config: str) -> dict[tuple[str, int], set[str]]:
    return {(r.role, r.index): {port.label for port in r.ports} for r in task_requests(load(config).spec)}


def test_it_gives_a_role_without_ports_only_its_ssh_and_rendezvous_ports():
    tasks = labels(v2_yaml("plain", "python train.py", instances=2))
    assert tasks == {("worker", 0): {"ssh", "rendezvous"}, ("worker", 1): {"ssh"}}


def test_it_gives_an_http_port_where_the_commands_read_a_host_list():
    tasks = labels((SEEDS / "seeds" / "002_tensorflow_distributed.json").read_text())
    assert all("http" in ports for ports in tasks.values())


def test_it_gives_an_http_port_where_a_command_reads_the_tasks_own_port():
    tasks = labels(v2_yaml("serve", "python3 -m http.server $PAI_CURRENT_CONTAINER_PORT"))
    assert tasks[("worker", 0)] == {"http", "ssh", "rendezvous"}


def test_it_gives_a_notebook_its_jupyter_port_and_no_http_one():
    jupyter = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: jupyter\n"
    config = v2_yaml("nb", "sleep infinity", extra=jupyter)
    assert labels(config)[("worker", 0)] == {"jupyter", "ssh", "rendezvous"}
