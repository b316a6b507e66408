"""Submitting a job checks its storage paths against the user's area, with the field's name."""

from typing import Any

import pytest

from jobs.actions import submit_job
from jobs.protocol import JobConfigError
from jobs.storage.areas import user_area
from tests.factories import v1_json

pytestmark = pytest.mark.django_db


@pytest.fixture
def area(settings, tmp_path, user):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return user_area(user.username)


def v1_job(**paths: Any) -> str:
    return v1_json("paths", "true", **paths)


def field_errors(user, text: str) -> dict[str, str]:
    with pytest.raises(JobConfigError) as error:
        submit_job(user, text)
    return dict(error.value.english)


def test_it_accepts_paths_inside_the_users_area(user, area):
    (area / "data").mkdir()
    job = submit_job(user, v1_job(dataDir="$PAI_DEFAULT_FS_URI/data", outputDir="$PAI_DEFAULT_FS_URI/out"))
    assert job.state == "WAITING"


def test_it_refuses_a_data_dir_that_climbs_out(user, area):
    assert "'..'" in field_errors(user, v1_job(dataDir="$PAI_DEFAULT_FS_URI/../bob"))["dataDir"]


def test_it_refuses_an_absolute_host_path(user, area):
    assert "outside your storage area" in field_errors(user, v1_job(codeDir="/etc"))["codeDir"]


def test_it_says_no_hdfs_is_configured(user, area):
    assert "no HDFS configured" in field_errors(user, v1_job(dataDir="hdfs://nn:9000/data"))["dataDir"]


def test_it_refuses_an_output_dir_through_a_symlink_out(user, area, tmp_path):
    (area / "out").symlink_to(tmp_path)
    assert "symbolic link" in field_errors(user, v1_job(outputDir="$PAI_DEFAULT_FS_URI/out/job"))["outputDir"]
