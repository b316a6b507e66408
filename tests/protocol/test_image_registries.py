"""Image names whose registry is the node itself, a link-local service or the portal's own host
are refused, with the field named, unless an admin allows that registry (issue 27, item 7); a
registry named by a host name is judged by the addresses it resolves to, with the webhooks' rule
(loopback, private, link-local, multicast, reserved: issue 44, item 5)."""

from __future__ import annotations

import pytest

from jobs.protocol import load
from jobs.protocol.images import image_registry_errors, pull_refusal, registry_of
from tests.factories import v1_json, v2_yaml

PORTAL_HOSTS = ["portal.example.com", ".cluster.example.com", "10.1.2.3"]
# What the names resolve to here (the machine's own name to its loopback, as Debian's /etc/hosts has it).
DNS = {
    "registry.example.com": ["93.184.216.34"],
    "gpu-box": ["127.0.1.1"],
    "registry.corp": ["10.20.0.5"],
    "metadata.cloud": ["169.254.169.254"],
    "split.example.com": ["93.184.216.35", "192.168.1.9"],
    "own.example.com": ["10.1.2.3"],
}


def resolve(host: str) -> list[str]:
    return DNS.get(host, [])


def v2_errors(image: str, allowed: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    spec = load(v2_yaml(image=f"'{image}'")).spec
    errors = image_registry_errors(spec, 2, portal_hosts=PORTAL_HOSTS, allowed=allowed, resolve=resolve)
    return [(field, message.text) for field, message in errors]


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
        ("0.0.0.0:5000/x", "a private address"),
        ("10.9.9.9:5000/x", "a private address"),
        ("[2001:db8::1]/x", "a private address"),
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


@pytest.mark.parametrize(
    ("image", "says"),
    [
        ("gpu-box:5000/x:1", "registry gpu-box:5000 is a name for a loopback address (127.0.1.1)"),
        ("registry.corp/x", "registry registry.corp is a name for a private address (10.20.0.5)"),
        ("metadata.cloud/x", "registry metadata.cloud is a name for a link-local address (169.254.169.254)"),
        ("split.example.com/x", "registry split.example.com is a name for a private address (192.168.1.9)"),
        ("own.example.com/x", "registry own.example.com is a name for this portal's own address"),
        ("nowhere.example.com/x", "registry nowhere.example.com is a host name that does not resolve"),
    ],
)
def test_it_judges_a_registry_named_by_a_host_name_by_the_addresses_it_resolves_to(image, says):
    [(field, message)] = v2_errors(image)
    assert field == "prerequisites[0].uri" and message.startswith(says)


@pytest.mark.parametrize("image", ["ubuntu:22.04", "registry.example.com/x:v1", "93.184.216.34:5000/x"])
def test_it_lets_public_registries_through(image):
    assert v2_errors(image) == []


def test_it_lets_a_lan_registry_an_admin_allows_through():
    assert v2_errors("registry.corp:5000/x", ("registry.corp",)) == []


def test_it_refuses_every_pull_of_a_forbidden_registry_with_one_message_naming_no_port_state():
    """Whatever the registry would have answered (a closed port, an open one, a page), the job's
    error is this sentence: made from the image and the address alone."""
    said = pull_refusal("gpu-box:5000/x:1", portal_hosts=PORTAL_HOSTS, allowed=(), resolve=resolve)
    assert said and said.text == (
        "pulling image gpu-box:5000/x:1 refused: registry gpu-box:5000 is a name for a loopback address (127.0.1.1); "
        "the node's engine may not pull from there unless an admin allows this registry "
        "(PAI_ALLOWED_PRIVATE_REGISTRIES)"
    )
    assert pull_refusal("registry.example.com/x", portal_hosts=PORTAL_HOSTS, allowed=(), resolve=resolve) is None


@pytest.mark.parametrize("allowed", [("127.0.0.1:8000",), ("127.0.0.1",), (" localhost:1 ", "127.0.0.1:8000")])
def test_it_lets_a_registry_an_admin_allows_through(allowed):
    assert v2_errors("127.0.0.1:8000/probe/x", allowed) == []


def test_it_keeps_refusing_another_port_of_an_allowed_registry():
    assert v2_errors("127.0.0.1:8001/probe/x", ("127.0.0.1:8000",)) != []


def test_it_names_the_v1_image_field():
    spec = load(v1_json(image="127.0.0.1:8000/probe/x")).spec
    errors = image_registry_errors(spec, 1, portal_hosts=(), allowed=(), resolve=resolve)
    assert [field for field, _ in errors] == ["image"]


def test_it_leaves_a_name_that_does_not_resolve_here_to_the_engine_until_its_pull_fails():
    """A resolver's hiccup at start ends no job; after the engine's pull failed, the same sentence
    as any forbidden registry's."""
    image = "nowhere.example.com/x"
    assert pull_refusal(image, portal_hosts=PORTAL_HOSTS, allowed=(), resolve=resolve) is None
    refused = pull_refusal(image, portal_hosts=PORTAL_HOSTS, allowed=(), resolve=resolve, pulled=True)
    assert refused and refused.text == (
        "pulling image nowhere.example.com/x refused: registry nowhere.example.com is a host name that does not "
        "resolve; the node's engine may not pull from there unless an admin allows this registry "
        "(PAI_ALLOWED_PRIVATE_REGISTRIES)"
    )
