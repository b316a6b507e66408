"""`make run`'s first-start setup and the production settings."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from clusters.models import Node, VirtualCluster

ROOT = Path(__file__).resolve().parent.parent


def bootstrap() -> str:
    out = io.StringIO()
    call_command("bootstrap", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_it_creates_the_default_virtual_cluster():
    assert VirtualCluster.objects.get(name="default").share_percent == 100


@pytest.mark.django_db
def test_it_prints_an_admin_password_that_logs_in(client):
    found = re.search(r"Password \(shown once\): (\S+)", bootstrap())
    assert found is not None
    assert client.login(username="admin", password=found.group(1))


@pytest.mark.django_db
def test_it_prints_the_password_only_once():
    bootstrap()
    assert "Password" not in bootstrap()


@pytest.mark.django_db
def test_it_registers_this_machine_as_a_node():
    bootstrap()
    node = Node.objects.get(name="local")
    assert node.cpus == os.cpu_count()
    assert node.memory_mb > 100


@pytest.mark.django_db
def test_it_registers_a_process_node_on_request():
    call_command("addnode", "--local", "--executor", "process", stdout=io.StringIO())
    assert Node.objects.get(name="local").executor == "process"


@pytest.mark.django_db
def test_it_opens_the_local_nodes_task_ports_on_an_address_other_than_the_portals():
    call_command("addnode", "--local", "--executor", "process", stdout=io.StringIO())
    assert Node.objects.get(name="local").address == "127.0.0.2"


@pytest.mark.django_db
def test_it_refuses_a_node_address_the_portal_is_served_on(settings):
    settings.ALLOWED_HOSTS = ["portal.example.org"]
    with pytest.raises(CommandError, match="portal is served on"):
        call_command("addnode", "gpu1", "--address", "portal.example.org", "--cpus", "4", "--memory-mb", "4096")


@pytest.fixture
def fresh_executors():
    from clusters.executors.registry import executor_for

    executor_for.cache_clear()
    yield
    executor_for.cache_clear()


@pytest.mark.django_db
def test_it_says_which_executor_runs_the_jobs_and_what_that_means(fresh_executors):
    call_command("addnode", "--local", "--executor", "process", stdout=io.StringIO())
    said = bootstrap()
    assert "node local: process executor" in said
    assert "bubblewrap sandbox" in said


@pytest.mark.django_db
def test_it_says_when_a_process_node_has_no_sandbox(monkeypatch, fresh_executors):
    from clusters.executors.sandbox import Sandbox

    monkeypatch.setattr(Sandbox, "probe", lambda self: "bubblewrap (bwrap) is not installed on this node")
    call_command("addnode", "--local", "--executor", "process", stdout=io.StringIO())
    assert "WITHOUT a sandbox (bubblewrap (bwrap) is not installed" in bootstrap()
    assert "only admins' jobs run here" in bootstrap()


# slow: a Django start and every check in a subprocess (~2 s of CPU); CI's own `check --deploy` step
# runs the same command first.
@pytest.mark.slow
def test_it_passes_the_deploy_checks_with_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},  # set by browser tests
        "PAI_PRODUCTION": "1",
        "PAI_VAR_DIR": str(tmp_path),
        "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-key-0123456789",
        "PAI_ALLOWED_HOSTS": "portal.example.org",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_requires_login_for_pages(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.django_db
def test_the_admin_form_refuses_a_node_address_the_portal_is_served_on(settings):
    settings.ALLOWED_HOSTS = ["portal.example.org"]
    node = Node(name="gpu1", address="portal.example.org", cpus=4, memory_mb=4096)
    with pytest.raises(ValidationError, match="portal is served on"):
        node.full_clean()


@pytest.mark.django_db
def test_it_opens_a_private_tun_device_and_says_so(monkeypatch, tmp_path):
    """A machine whose /dev/net/tun is 0600 runs no one's sandboxed task but admins': `make run`
    gives it 0666 and says so."""
    from clusters.executors import netns

    private = tmp_path / "tun"
    private.touch(mode=0o600)
    monkeypatch.setattr(netns, "TUN_DEVICE", str(private))
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    assert "set to 0666" in bootstrap()
    assert private.stat().st_mode & 0o777 == 0o666
