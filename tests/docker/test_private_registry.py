"""Pulling from a private registry: Debian's docker-registry on localhost with htpasswd auth.

Docker talks plain HTTP to registries on 127.0.0.0/8, so no TLS is needed here.
"""

import contextlib
import re
import shutil
import socket
import subprocess
import time

import pytest

from clusters.executors.base import ExecutorError, Failure
from tests.conftest import require
from tests.factories import default_image

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

USER, PASSWORD = "researcher", "registry-pass-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A registry on 127.0.0.1:<port> that accepts USER/PASSWORD only."""
    require(
        bool(shutil.which("docker-registry") and shutil.which("htpasswd")),
        "Debian's docker-registry and apache2-utils (htpasswd)",
    )
    root = tmp_path_factory.mktemp("registry")
    htpasswd = subprocess.run(["htpasswd", "-Bbn", USER, PASSWORD], check=True, capture_output=True, text=True)
    (root / "htpasswd").write_text(htpasswd.stdout)
    port = free_port()
    (root / "config.yml").write_text(
        f"""version: 0.1
log: {{level: warn}}
storage: {{filesystem: {{rootdirectory: {root}/data}}, delete: {{enabled: true}}}}
http: {{addr: "127.0.0.1:{port}"}}
auth: {{htpasswd: {{realm: pai-test, path: {root}/htpasswd}}}}
"""
    )
    server = subprocess.Popen(
        ["docker-registry", "serve", str(root / "config.yml")],
        stdout=subprocess.DEVNULL,
        stderr=open(root / "registry.log", "wb"),  # noqa: SIM115 - lives as long as the server
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert server.poll() is None, (root / "registry.log").read_text()
            assert time.monotonic() < deadline, "the registry did not start"
            time.sleep(0.1)
    yield f"127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(autouse=True)
def allow_the_test_registry(registry, settings):
    """A registry on the node's loopback is refused at submit unless the admin allows it."""
    settings.PAI_ALLOWED_PRIVATE_REGISTRIES = [registry]


@pytest.fixture(scope="module")
def pushed_image(registry, docker_engine):
    """The base image pushed to the registry under a new name, then removed from the engine."""
    import docker

    api = docker.APIClient(timeout=300)
    repository = f"{registry}/pai-test/base"
    api.tag(default_image(), repository, tag="v1")
    auth = {"username": USER, "password": PASSWORD, "serveraddress": registry}
    output = api.push(repository, tag="v1", auth_config=auth)
    assert "error" not in output.lower(), output
    api.remove_image(f"{repository}:v1")
    yield f"{repository}:v1"
    for tag in ("v1", "absent"):
        with contextlib.suppress(docker.errors.ImageNotFound):
            api.remove_image(f"{repository}:{tag}", force=True)


def test_it_pulls_an_image_with_the_jobs_registry_credentials(executor, launch_for, wait_exit, pushed_image, registry):
    ips = executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    auth = {"registry": registry, "username": USER, "password": PASSWORD}
    launch = launch_for("worker", 0, "echo pulled", image=pushed_image, registry_auth=auth, ip=ips[("worker", 0)])
    handle = executor.start(launch)
    assert wait_exit(handle).exit_code == 0
    assert "pulled" in launch.log_path.read_text()


def test_it_says_the_registry_refused_wrong_credentials(executor, launch_for, registry, pushed_image):
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    auth = {"registry": registry, "username": USER, "password": "wrong"}
    image = f"{registry}/pai-test/base:absent"
    with pytest.raises(
        ExecutorError,
        match=re.escape(f"pulling image {image} from registry {registry} failed: the registry refused the credentials"),
    ) as error:
        executor.start(launch_for("worker", 0, "true", image=image, registry_auth=auth))
    assert error.value.failure == Failure.IMAGE_NOT_FOUND


def test_it_says_an_image_is_not_in_the_registry(executor, launch_for, registry, pushed_image):
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    auth = {"registry": registry, "username": USER, "password": PASSWORD}
    image = f"{registry}/pai-test/nothing-here:v1"
    with pytest.raises(
        ExecutorError,
        match=re.escape(f"pulling image {image} from registry {registry} failed: image not found in the registry"),
    ) as error:
        executor.start(launch_for("worker", 0, "true", image=image, registry_auth=auth))
    assert error.value.failure == Failure.IMAGE_NOT_FOUND


def forget_image(image: str) -> None:
    """Make the engine pull again."""
    import docker

    with contextlib.suppress(docker.errors.ImageNotFound):
        docker.APIClient(timeout=60).remove_image(image, force=True)


def v1_job_with_auth_file(name: str, image: str) -> str:
    import json

    return json.dumps(
        {
            "jobName": name,
            "image": image,
            "authFile": "$PAI_DEFAULT_FS_URI/registry-auth",
            "taskRoles": [
                {"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 0, "command": "echo hi"}
            ],
        }
    )


def test_a_job_pulls_its_image_with_its_auth_file(user, docker_node, run_until, registry, pushed_image):
    from jobs import storage
    from jobs.actions import submit_job

    forget_image(pushed_image)
    (storage.user_area(user.username) / "registry-auth").write_text(f"{registry}\n{USER}\n{PASSWORD}\n")
    job = run_until(submit_job(user, v1_job_with_auth_file("pull-ok", pushed_image)), "SUCCEEDED", "FAILED")
    assert job.state == "SUCCEEDED", job.exit_diagnostics


def test_a_job_with_wrong_registry_credentials_fails_with_a_clear_reason(
    user, docker_node, run_until, registry, pushed_image
):
    from jobs import storage
    from jobs.actions import submit_job

    forget_image(pushed_image)
    (storage.user_area(user.username) / "registry-auth").write_text(f"{registry}\n{USER}\nwrong-password\n")
    job = run_until(submit_job(user, v1_job_with_auth_file("pull-denied", pushed_image)), "SUCCEEDED", "FAILED")
    assert (job.state, job.exit_code) == ("FAILED", 254)
    assert (
        f"pulling image {pushed_image} from registry {registry} failed: the registry refused the credentials"
        in job.exit_diagnostics
    )


def test_a_v2_job_pulls_with_its_prerequisites_auth_and_a_secret(user, docker_node, run_until, registry, pushed_image):
    from jobs.actions import submit_job

    forget_image(pushed_image)
    text = f"""protocolVersion: 2
name: pull-v2
type: job
secrets:
  registryPassword: {PASSWORD}
prerequisites:
  - name: image
    type: dockerimage
    uri: {pushed_image}
    auth:
      username: {USER}
      password: <% $secrets.registryPassword %>
      registryuri: {registry}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - echo pulled with a secret
"""
    job = run_until(submit_job(user, text), "SUCCEEDED", "FAILED")
    assert job.state == "SUCCEEDED", job.exit_diagnostics
