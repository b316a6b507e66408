"""Image names whose registry is the node itself, a link-local service or the portal's own host
are refused, with the field named, unless an admin allows that registry (issue 27, item 7)."""

from __future__ import annotations

import pytest

from jobs.protocol import load
from jobs.protocol.images import image_registry_errors, registry_of
from tests.factories import v1_json, v2_yaml

PORTAL_HOSTS = ["portal.example.com", ".cluster.example.com", "10.1.2.3"]


def v2_errors(image: str, allowed: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return image_registry_errors(load(v2_yaml(image=f"'{image}'")).spec, 2, portal_hosts=PORTAL_HOSTS, allowed=allowed)


@pytest.mark.parametrize(
    ("image", "registry"),
    [
        ("ubuntu:22.04", None),
        ("library/ubuntu", None),
        ("127.0.0.1:8000/probe/x", "127.0.0.1:8000"),
        ("localhost/x", "localhost"),
        ("[::1]:5000/x:v1", "[::1]:5000"),
        ("registry.example.com/team/image@sha256:" + "0" * 64, "registry.example.com"),
        ("Mirror/x", "Mirror"),
    ],
)
def test_it_reads_the_registry_of_an_image_as_docker_does(image, registry):
    assert registry_of(image) == registry


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ("127.0.0.1:8000/probe/x", "a loopback address"),
        ("127.1:5000/x", "a loopback address"),
        ("2130706433:5000/x", "a loopback address"),
        ("localhost:5000/x", "a loopback address"),
        ("api.localhost/x", "a loopback address"),
        ("[::1]:5000/x", "a loopback address"),
        ("[::ffff:127.0.0.1]:5000/x", "a loopback address"),
        ("169.254.169.254/latest/x", "a link-local address"),
        ("[fe80::1]:5000/x", "a link-local address"),
        ("0.0.0.0:5000/x", "an unspecified address"),
        ("portal.example.com/x", "this portal's own address"),
        ("PORTAL.example.com.:443/x", "this portal's own address"),
        ("web.cluster.example.com/x", "this portal's own address"),
        ("10.1.2.3:5000/x", "this portal's own address"),
    ],
)
def test_it_refuses_a_registry_on_the_node_or_the_portal_naming_the_field(image, reason):
    [(field, message)] = v2_errors(image)
    assert field == "prerequisites[0].uri"
    assert f"registry {image.split('/')[0]} is {reason}" in message
    assert "PAI_ALLOWED_PRIVATE_REGISTRIES" in message


@pytest.mark.parametrize("image", ["ubuntu:22.04", "registry.example.com/x:v1", "10.9.9.9:5000/x", "[2001:db8::1]/x"])
def test_it_lets_public_and_lan_registries_through(image):
    assert v2_errors(image) == []


@pytest.mark.parametrize("allowed", [("127.0.0.1:8000",), ("127.0.0.1",), (" localhost:1 ", "127.0.0.1:8000")])
def test_it_lets_a_registry_an_admin_allows_through(allowed):
    assert v2_errors("127.0.0.1:8000/probe/x", allowed) == []


def test_it_keeps_refusing_another_port_of_an_allowed_registry():
    assert v2_errors("127.0.0.1:8001/probe/x", ("127.0.0.1:8000",)) != []


def test_it_names_the_v1_image_field():
    spec = load(v1_json(image="127.0.0.1:8000/probe/x")).spec
    errors = image_registry_errors(spec, 1, portal_hosts=(), allowed=())
    assert [field for field, _ in errors] == ["image"]
