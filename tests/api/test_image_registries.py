"""At submit, an image whose registry is the node's loopback, a link-local service or one of the
portal's own hosts or nodes is refused with the field named, unless PAI_ALLOWED_PRIVATE_REGISTRIES
lists it (issue 27, item 7: the node's engine would probe it for the user)."""

from __future__ import annotations

import socket

from tests.factories import v2_yaml


def refused_fields(response) -> dict[str, str]:
    assert response.status_code == 400, response.content
    return {error["field"]: error["message"] for error in response.json()["errors"]}


def test_it_refuses_an_image_from_a_loopback_registry_at_submit(submit_yaml):
    fields = refused_fields(submit_yaml(v2_yaml("probe", image="127.0.0.1:8000/probe/x")))
    assert fields["prerequisites[0].uri"].startswith("registry 127.0.0.1:8000 is a loopback address;")


def test_it_refuses_an_image_from_the_portals_own_host_name(submit_yaml, settings):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "portal.example.com"]
    fields = refused_fields(submit_yaml(v2_yaml("probe", image="portal.example.com/x")))
    assert "this portal's own address" in fields["prerequisites[0].uri"]


def test_it_refuses_an_image_from_a_nodes_address(submit_yaml, db):
    from clusters.models import Node

    Node.objects.create(name="gpu-1", address="10.7.0.5")
    fields = refused_fields(submit_yaml(v2_yaml("probe", image="10.7.0.5:5000/x")))
    assert "this portal's own address" in fields["prerequisites[0].uri"]


def test_it_takes_an_image_from_a_registry_the_admin_allows(submit_yaml, settings):
    settings.PAI_ALLOWED_PRIVATE_REGISTRIES = ["127.0.0.1:8000"]
    assert submit_yaml(v2_yaml("probe", image="127.0.0.1:8000/probe/x")).status_code == 202


def test_it_checks_each_sweep_run_as_a_job_naming_the_run_whose_image_is_refused(submit_yaml):
    """Issue 44, item 5: the image is a parameter, and only the second run's value is a loopback
    registry (the runs after the first used to get the protocol's checks alone)."""
    sweep = v2_yaml("probe", image="'<% $parameters.img %>'") + (
        "extras:\n  sweep: {grid: {img: [pai-portal/base:latest, '127.0.0.1:5000/x:1']}}\n"
    )
    fields = refused_fields(submit_yaml(sweep))
    assert fields["prerequisites[0].uri"].startswith(
        "run probe-1 (img=127.0.0.1:5000/x:1): registry 127.0.0.1:5000 is a loopback address;"
    )


def test_it_refuses_a_registry_named_by_this_machines_own_name(submit_yaml):
    """The machine's name resolves to its loopback (Debian's 127.0.1.1) or its own network: the
    engine would reach the node's services either way."""
    host = socket.gethostname().lower()
    fields = refused_fields(submit_yaml(v2_yaml("probe", image=f"{host}:5000/x:1")))
    assert fields["prerequisites[0].uri"].startswith(f"registry {host}:5000 is a ")
