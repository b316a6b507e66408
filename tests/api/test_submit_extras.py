"""Submitting OpenPAI extras through the API: refused ones name their field; honoured ones land."""

import pytest

from clusters.models import GpuType
from jobs.models import Job
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db


def test_it_refuses_an_unsupported_runtime_plugin_naming_the_field(submit_yaml):
    extra = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: blobfuse_cache\n"
    response = submit_yaml(v2_yaml("blobfuse", extra="") + extra)
    assert response.status_code == 400
    assert response.json()["field"] == "extras.com.microsoft.pai.runtimeplugin[0].plugin"


def test_it_names_the_sku_type_field_for_an_unknown_gpu_type(submit_yaml):
    GpuType.objects.create(name="V100")
    extra = "extras:\n  hivedScheduler:\n    taskRoles:\n      worker:\n        skuType: K80\n"
    response = submit_yaml(v2_yaml("k80") + extra)
    assert response.status_code == 400
    assert response.json()["field"] == "extras.hivedScheduler.taskRoles.worker.skuType"
    assert 'GPU type "K80" does not exist (known: V100)' in response.json()["message"]


def test_it_sets_the_jobs_priority_from_its_priority_class(submit_yaml):
    assert submit_yaml(v2_yaml("prod") + "extras:\n  hivedScheduler:\n    jobPriorityClass: prod\n").status_code == 202
    assert Job.objects.get(name="prod").priority == 100
