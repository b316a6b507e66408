"""Job templates (issue 34): saved from a job or pasted, private or for everyone, searched, and
started from (the submit form filled in with the parameters asked); OpenPAI marketplace items
imported as they were stored."""

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from jobs import job_templates
from jobs.actions import submit_job
from jobs.models import JobTemplate
from jobs.protocol import JobConfigError
from tests.factories import v2_yaml

# OpenPAI's marketplace-v2/pytorch-mnist.yaml, as stored in microsoft/pai.
MARKETPLACE_V2 = """protocolVersion: 2
name: pytorch_mnist
type: job
version: 1.0
contributor: OpenPAI
description: |
  This is a basic PyTorch MNIST digit recognition example running on OpenPAI.
parameters:
  epochs: 1
  batchsize: 64
  lr: 0.01
prerequisites:
  - protocolVersion: 2
    name: pytorch_example
    type: dockerimage
    version: 1.0
    contributor : OpenPAI
    uri : openpai/pai.example.pytorch
taskRoles:
  worker:
    instances: 1
    completion:
      minSucceededInstances: 1
    dockerImage: pytorch_example
    resourcePerInstance:
      cpu: 4
      memoryMB: 8192
      gpu: 1
    commands:
      - >
        python examples/mnist/main.py
        --epochs <% $parameters.epochs %>
        --lr <% $parameters.lr %>
"""
# An openpaimarketplace item (its REST server's shape: jobConfig stored as an object).
MARKETPLACE_ITEM = {
    "name": "cifar10-resnet",
    "author": "openpai",
    "type": "template",
    "categories": ["image classification"],
    "tags": ["pytorch"],
    "summary": "ResNet on CIFAR-10",
    "description": "Trains a ResNet-18 on CIFAR-10.",
    "jobConfig": {
        "protocolVersion": 2,
        "name": "cifar10",
        "type": "job",
        "prerequisites": [
            {"name": "image", "type": "dockerimage", "uri": "openpai/standard:python_3.6-pytorch_1.2.0-gpu"}
        ],
        "parameters": {"epochs": 5},
        "taskRoles": {
            "taskrole": {
                "instances": 1,
                "dockerImage": "image",
                "resourcePerInstance": {"cpu": 3, "memoryMB": 29065, "gpu": 1},
                "commands": ["python train.py --epochs <% $parameters.epochs %>"],
            }
        },
    },
}


def test_it_imports_marketplace_v2_files_and_openpaimarketplace_items(user, tmp_path):
    (tmp_path / "pytorch-mnist.yaml").write_text(MARKETPLACE_V2)
    (tmp_path / "items.json").write_text(json.dumps([MARKETPLACE_ITEM]))
    call_command(
        "importtemplates",
        str(tmp_path / "pytorch-mnist.yaml"),
        str(tmp_path / "items.json"),
        "--user",
        "alice",
        "--public",
    )
    mnist, cifar = JobTemplate.objects.order_by("name").reverse()
    assert (mnist.name, mnist.source, mnist.visibility) == ("pytorch_mnist", "marketplace-v2", "public")
    assert mnist.summary.startswith("This is a basic PyTorch MNIST")
    assert job_templates.asked_parameters(mnist) == {"epochs": 1, "batchsize": 64, "lr": 0.01}
    assert (cifar.name, cifar.source, cifar.summary, cifar.tags) == (
        "cifar10-resnet",
        "openpaimarketplace",
        "ResNet on CIFAR-10",
        ["image classification", "pytorch"],
    )


def test_it_refuses_a_template_whose_config_cannot_run_naming_the_field(user):
    with pytest.raises(JobConfigError) as refused:
        job_templates.save(user, name="bad", config_text=v2_yaml("x", memory_mb=10))
    assert refused.value.english == [("config.taskRoles.worker.resourcePerInstance.memoryMB", "must be >= 100")]


def test_it_saves_a_jobs_config_as_a_template_from_the_job_page(client, user, default_vc):
    job = submit_job(user, v2_yaml("train", "echo <% $parameters.lr %>", extra="parameters: {lr: 0.1}\n"))
    client.force_login(user)
    page = client.get(reverse("jobs:detail", args=[job.full_name])).content.decode()
    assert f"{reverse('templates:new')}?from=alice~train" in page
    form = client.get(reverse("templates:new"), {"from": job.full_name}).content.decode()
    assert "echo &lt;% $parameters.lr %&gt;" in form
    answer = client.post(
        reverse("templates:new"),
        {
            "name": "lr run",
            "summary": "one run",
            "description": "",
            "visibility": "private",
            "config_text": job.config_text,
        },
    )
    template = JobTemplate.objects.get()
    assert answer.status_code == 302 and answer.url == reverse("templates:detail", args=[template.pk])


def test_it_opens_the_submit_form_filled_from_a_template_with_the_values_asked(client, user, default_vc):
    template = job_templates.save(
        user,
        name="t",
        config_text=v2_yaml("train", "echo <% $parameters.lr %>", extra="parameters: {lr: 0.1, epochs: 3}\n"),
    )
    client.force_login(user)
    detail = client.get(reverse("templates:detail", args=[template.pk])).content.decode()
    assert 'name="p.lr" value="0.1"' in detail and 'name="p.epochs" value="3"' in detail
    form = client.get(reverse("jobs:submit"), {"template": template.pk, "p.lr": "0.02", "p.epochs": ""})
    assert form.context["form_data"].job["parameters"] == "lr=0.02\nepochs=3"
    assert form.context["form_data"].job["name"] == "train"


def test_it_shows_public_templates_to_everyone_and_private_ones_to_their_owner(client, user, other_user):
    job_templates.save(user, name="mine", config_text=v2_yaml("a"))
    shared = job_templates.save(user, name="shared", config_text=v2_yaml("b"), visibility="public")
    client.force_login(other_user)
    listed = client.get(reverse("templates:list")).content.decode()
    assert 'data-template="shared"' in listed and 'data-template="mine"' not in listed
    assert client.get(reverse("templates:delete", args=[shared.pk])).status_code == 404  # (not theirs to delete)
    found = client.get(reverse("templates:list"), {"q": "share"}).content.decode()
    assert 'data-template="shared"' in found


def test_it_deletes_a_template_after_asking(client, user):
    template = job_templates.save(user, name="old", config_text=v2_yaml("a"))
    client.force_login(user)
    assert "Delete the template" in client.get(reverse("templates:delete", args=[template.pk])).content.decode()
    client.post(reverse("templates:delete", args=[template.pk]))
    assert not JobTemplate.objects.exists()


def test_the_api_saves_lists_reads_and_deletes_templates(client, user):
    client.force_login(user)
    made = client.post("/api/v2/templates", MARKETPLACE_ITEM, content_type="application/json")
    assert made.status_code == 201 and made.json()["parameters"] == {"epochs": 5}
    own = client.post(
        "/api/v2/templates",
        {"name": "mine", "config": v2_yaml("a"), "visibility": "public"},
        content_type="application/json",
    )
    assert own.status_code == 201
    assert [t["name"] for t in client.get("/api/v2/templates", {"q": "cifar"}).json()] == ["cifar10-resnet"]
    assert "taskRoles" in client.get(f"/api/v2/templates/{own.json()['id']}").json()["config"]
    assert client.delete(f"/api/v2/templates/{own.json()['id']}").status_code == 204


def test_the_api_refuses_a_bad_template_naming_the_field(client, user):
    client.force_login(user)
    answer = client.post(
        "/api/v2/templates", {"name": "x", "config": v2_yaml("a", memory_mb=10)}, content_type="application/json"
    )
    assert answer.status_code == 400
    assert "config.taskRoles.worker.resourcePerInstance.memoryMB: must be >= 100" in answer.json()["message"]
