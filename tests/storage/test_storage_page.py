"""The storage page: login required, confined to the user's own area, size-limited."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs import storage

pytestmark = pytest.mark.django_db


@pytest.fixture
def area(settings, tmp_path, user):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return storage.user_area(user.username)


@pytest.fixture
def signed_in(client, user, area):
    client.force_login(user)
    return client


def upload(client, path: str, *files):
    return client.post(reverse("storage:browse"), {"action": "upload", "path": path, "files": list(files)})


def test_it_requires_login(client, area):
    response = client.get(reverse("storage:browse"))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_it_lists_the_users_area_with_its_config_path(signed_in, area):
    (area / "data").mkdir()
    page = signed_in.get(reverse("storage:browse")).content.decode()
    assert "data/" in page
    assert "$PAI_DEFAULT_FS_URI" in page


def test_it_uploads_files_into_the_chosen_folder(signed_in, area):
    response = upload(signed_in, "code/job1", SimpleUploadedFile("train.py", b"print(1)\n"))
    assert response.status_code == 302
    assert (area / "code" / "job1" / "train.py").read_bytes() == b"print(1)\n"


def test_it_refuses_an_upload_over_the_limit(signed_in, area, settings):
    settings.PAI_FS_UPLOAD_MAX_BYTES = 1000
    response = upload(signed_in, "", SimpleUploadedFile("big.bin", b"x" * 5000))
    assert list(area.iterdir()) == []
    assert "over the limit" in signed_in.get(response["Location"]).content.decode()


def test_it_refuses_a_folder_outside_the_area(signed_in, area):
    response = upload(signed_in, "../bob", SimpleUploadedFile("x.txt", b"x"))
    assert not (area.parent / "bob" / "x.txt").exists()
    assert "not allowed" in signed_in.get(response["Location"]).content.decode()


def test_it_only_shows_the_signed_in_users_files(signed_in, other_user, area):
    storage.save_file(other_user.username, "bobs-secret.txt", [b"x"])
    assert "bobs-secret.txt" not in signed_in.get(reverse("storage:browse")).content.decode()


def test_it_deletes_a_file(signed_in, area):
    storage.save_file("alice", "data/x.txt", [b"x"])
    signed_in.post(reverse("storage:browse"), {"action": "delete", "path": "data", "name": "x.txt"})
    assert not (area / "data" / "x.txt").exists()


def test_it_still_checks_the_csrf_token(user, area):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = upload(client, "", SimpleUploadedFile("x.txt", b"x"))
    assert response.status_code == 403
    assert not (area / "x.txt").exists()
