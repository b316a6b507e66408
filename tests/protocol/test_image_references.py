"""An image reference Docker would refuse (or read as another registry) is refused at submit with
the field named and why (issue 36: `PyTorch/pytorch:2.1 cuda12` was accepted, then failed at run
time as an unknown failure and was retried)."""

from __future__ import annotations

import pytest

from jobs.protocol import load
from jobs.protocol.images import image_reference_errors, reference_error
from tests.factories import v1_json, v2_yaml


@pytest.mark.parametrize(
    "image",
    [
        "ubuntu",
        "ubuntu:22.04",
        "library/ubuntu",
        "pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime",
        "nvcr.io/nvidia/pytorch:23.10-py3",
        "localhost:5000/team/image:v1",
        "registry.example.com:5000/a/b/c:V1.2_rc-1",
        "[::1]:5000/x:v1",
        "ghcr.io/owner/repo@sha256:" + "0" * 64,
        "my__repo/with-dashes--x.y:latest",
    ],
)
def test_it_accepts_what_docker_accepts(image):
    assert reference_error(image) is None


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("pytorch/pytorch:2.1 cuda12", "has a space in it"),
        ("PyTorch/pytorch:2.1", "Docker would read as a registry's host name"),
        ("pytorch/PyTorch:2.1", "must be lowercase in its repository name (pytorch/pytorch"),
        ("ghcr.io/Owner/repo", "must be lowercase"),
        ("ubuntu:-22.04", "invalid tag '-22.04'"),
        ("ubuntu:" + "x" * 129, "invalid tag"),
        ("ubuntu@sha256:xyz", "invalid digest"),
        ("team//image", "invalid repository name part ''"),
        ("team/-image", "invalid repository name part '-image'"),
        ("bad_host.example.com/x", "invalid registry host"),
    ],
)
def test_it_says_why_a_reference_is_invalid(image, why):
    assert why in str(reference_error(image) or "")


def test_it_gives_both_reasons_of_the_issues_example():
    reason = str(reference_error("PyTorch/pytorch:2.1 cuda12") or "")
    assert "has a space" in reason and "pytorch/pytorch" in reason


def test_it_names_the_v2_field():
    [(field, message)] = image_reference_errors(load(v2_yaml(image="'PyTorch/pytorch:2.1 cuda12'")).spec, 2)
    assert field == "prerequisites[0].uri"
    assert message.text.startswith("'PyTorch/pytorch:2.1 cuda12' is not a valid image reference: has a space")


def test_it_names_the_v1_field():
    [(field, _)] = image_reference_errors(load(v1_json(image="Ubuntu:22.04")).spec, 1)
    assert field == "image"
