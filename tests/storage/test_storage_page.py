"""The storage page: login required, confined to the user's own area, size-limited."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs.storage import areas as storage

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


def test_it_asks_before_deleting_a_file_of_ones_own(signed_in, area):
    storage.save_file("alice", "data/x.txt", [b"x"])
    form = {"action": "delete", "path": "data", "name": "x.txt"}
    response = signed_in.post(reverse("storage:browse"), form)
    assert "It cannot be brought back" in response.content.decode()
    assert (area / "data" / "x.txt").exists()


def test_it_deletes_a_file_once_confirmed_and_says_which(signed_in, area):
    storage.save_file("alice", "data/x.txt", [b"x"])
    form = {"action": "delete", "path": "data", "name": "x.txt", "confirm": "yes"}
    response = signed_in.post(reverse("storage:browse"), form, follow=True)
    assert not (area / "data" / "x.txt").exists()
    assert "Removed x.txt." in response.content.decode()


def test_it_still_checks_the_csrf_token(user, area):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = upload(client, "", SimpleUploadedFile("x.txt", b"x"))
    assert response.status_code == 403
    assert not (area / "x.txt").exists()


@pytest.fixture
def team(make_storage, tmp_path):
    root = tmp_path / "team"
    root.mkdir()
    return make_storage("team", kind="hostPath", server="", path=str(root), mount_path="/mnt/team")


def test_it_lists_a_storage_the_user_may_use_with_its_mount_path(signed_in, team, tmp_path):
    (tmp_path / "team" / "datasets").mkdir()
    page = signed_in.get(reverse("storage:browse"), {"storage": "team"}).content.decode()
    assert "datasets/" in page
    assert "/mnt/team" in page and "storageConfigNames: [team]" in page


def test_it_answers_not_found_for_a_storage_the_user_may_not_use(signed_in, team, other_user):
    team.allowed_users.add(other_user)
    assert signed_in.get(reverse("storage:browse"), {"storage": "team"}).status_code == 404


def test_it_asks_before_deleting_a_file_on_a_shared_storage(signed_in, team, tmp_path):
    (tmp_path / "team" / "a.txt").write_text("a")
    form = {"storage": "team", "action": "delete", "path": "", "name": "a.txt"}
    response = signed_in.post(reverse("storage:browse"), form)
    assert "Everyone who uses this storage loses it" in response.content.decode()
    assert (tmp_path / "team" / "a.txt").exists()
    signed_in.post(reverse("storage:browse"), {**form, "confirm": "yes"})
    assert not (tmp_path / "team" / "a.txt").exists()


def test_it_refuses_to_change_a_read_only_storage(signed_in, team, tmp_path):
    team.read_only = True
    team.save()
    (tmp_path / "team" / "a.txt").write_text("a")
    form = {"storage": "team", "action": "delete", "path": "", "name": "a.txt", "confirm": "yes"}
    signed_in.post(reverse("storage:browse"), form)
    assert (tmp_path / "team" / "a.txt").exists()


def test_it_keeps_paths_inside_the_storage(signed_in, team, tmp_path):
    (tmp_path / "secret.txt").write_text("s")
    response = signed_in.get(reverse("storage:download"), {"storage": "team", "path": "../secret.txt"})
    assert response.status_code == 404


def test_it_downloads_a_file_of_a_storage(signed_in, team, tmp_path):
    (tmp_path / "team" / "a.txt").write_text("from the team")
    response = signed_in.get(reverse("storage:download"), {"storage": "team", "path": "a.txt"})
    assert b"".join(response.streaming_content) == b"from the team"
