"""A failed pull says what failed (which image, which registry, in words) and never the page the
registry answered: an image naming a service as its registry must not read that service's answer
back to the user through the job's error (issue 27, item 7)."""

from __future__ import annotations

import http.server
import threading

import pytest

from clusters.executors.base import ExecutorError, Failure
from clusters.executors.docker_images import pull_failure_message

pytestmark = [pytest.mark.docker]

SECRET_PAGE = "<html>internal-admin-token-9f3a</html>"


class SecretService(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(SECRET_PAGE.encode())

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def secret_service():
    """An HTTP service on the node's loopback that answers every path with a page worth stealing."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SecretService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_it_fails_a_pull_from_a_service_without_echoing_its_page(executor, launch_for, secret_service):
    image = f"{secret_service}/probe/x:v1"
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    with pytest.raises(ExecutorError) as error:
        executor.start(launch_for("worker", 0, "true", image=image))
    assert error.value.failure == Failure.IMAGE_NOT_FOUND
    assert str(error.value).startswith(f"pulling image {image} from registry {secret_service} failed: ")
    assert "internal-admin-token" not in str(error.value)


@pytest.mark.parametrize(
    ("reason", "with_credentials", "says"),
    [
        (
            "error parsing HTTP 404 response body: invalid character '<': \"<html>internal-admin-token</html>\"",
            False,
            "the registry answered HTTP 404 Not Found",
        ),
        (
            'Head "https://reg.example.com/v2/x/manifests/v1": unauthorized: authentication required',
            True,
            "the registry refused the credentials",
        ),
        (
            "pull access denied for x, repository does not exist or may require 'docker login'",
            False,
            "image not found, or the registry needs credentials (authFile)",
        ),
        (
            'Get "https://reg.example.com/v2/": dial tcp: lookup reg.example.com: no such host',
            False,
            "the image is not on the node and the registry cannot be reached",
        ),
        (
            "manifest for reg.example.com/x:v9 not found: manifest unknown: manifest unknown",
            False,
            "image not found in the registry",
        ),
        ("something new: <html>internal-admin-token</html>", False, "the engine could not pull it"),
    ],
)
def test_it_says_what_failed_in_a_pull_without_the_remote_text(reason, with_credentials, says):
    message = pull_failure_message("reg.example.com/x:v1", reason, with_credentials).text
    assert message == f"pulling image reg.example.com/x:v1 from registry reg.example.com failed: {says}"


def test_it_fails_a_malformed_image_reference_as_image_not_found(executor, launch_for):
    """Issue 36: a reference the engine refuses ends as 254 (never retried) saying what to change,
    not as an unknown create failure retried up to the count."""
    image = "PyTorch/pytorch:2.1 cuda12"
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    with pytest.raises(ExecutorError) as error:
        executor.start(launch_for("worker", 0, "true", image=image))
    assert error.value.failure == Failure.IMAGE_NOT_FOUND
    assert str(error.value) == (
        f"image {image!r} is not a valid image reference (invalid reference format: repository name must be "
        "lowercase): correct the image in the job's config"
    )
