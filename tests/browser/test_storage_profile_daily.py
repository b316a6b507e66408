"""The storage and profile pages as a researcher uses them (issue 18): download a file, a
confirmation before a folder full of files goes, a copy button for a new token; a confirmation
before any file, token or SSH key goes, and a message naming it after (issue 50)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.storage import areas as storage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def area(settings, tmp_path, user):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return storage.user_area(user.username)


def test_it_downloads_a_file(page, login, area, tmp_path):
    (area / "results").mkdir()
    (area / "results" / "metrics.csv").write_text("epoch,loss\n1,0.9\n")
    login()
    page.goto("/storage/?path=results")
    with page.expect_download() as download:
        page.locator('tr[data-entry="metrics.csv"] [data-download]').click()
    saved = tmp_path / "saved.csv"
    download.value.save_as(saved)
    assert saved.read_text() == "epoch,loss\n1,0.9\n"


def test_it_asks_before_deleting_a_folder_with_files(page, login, area):
    (area / "old-run").mkdir()
    (area / "old-run" / "model.pt").write_bytes(b"weights")
    login()
    page.goto("/storage/")
    page.locator('tr[data-entry="old-run"]').get_by_role("button", name="Delete").click()
    expect(page.locator("h1")).to_have_text("Delete folder")
    assert (area / "old-run" / "model.pt").exists()
    page.get_by_role("button", name="Delete the folder").click()
    expect(page.locator(".messages")).to_contain_text("Removed old-run.")
    assert not (area / "old-run").exists()


def test_it_asks_before_deleting_a_file(page, login, area):
    (area / "model.pt").write_bytes(b"weights")
    login()
    page.goto("/storage/")
    page.locator('tr[data-entry="model.pt"]').get_by_role("button", name="Delete").click()
    expect(page.locator("main")).to_contain_text("Delete model.pt? It cannot be brought back.")
    assert (area / "model.pt").exists()
    page.get_by_role("button", name="Delete it").click()
    expect(page.locator(".messages")).to_contain_text("Removed model.pt.")
    assert not (area / "model.pt").exists()


def test_it_asks_before_revoking_a_token_and_names_it_after(page, login, user):
    from accounts.models import Token
    from accounts.tokens import issue_token

    issue_token(user, Token.Kind.APPLICATION, name="ci-nightly")
    login()
    page.goto("/profile/")
    page.get_by_role("row", name="ci-nightly").get_by_role("link", name="Revoke").click()
    expect(page.locator("h1")).to_have_text("Revoke token")
    assert Token.objects.filter(name="ci-nightly").exists()
    page.get_by_role("button", name="Revoke the token").click()
    expect(page.locator(".messages")).to_contain_text("Token ci-nightly")
    assert not Token.objects.filter(name="ci-nightly").exists()


def test_it_asks_before_removing_an_ssh_key_and_names_it_after(page, login, user):
    from accounts.models import SshPublicKey
    from accounts.ssh_keys import add_key
    from tests.accounts.test_ssh_keys import public_key

    add_key(user, public_key(), "laptop")
    login()
    page.goto("/profile/")
    page.locator("[data-ssh-key-row]").get_by_role("link", name="Remove").click()
    expect(page.locator("h1")).to_have_text("Remove SSH key")
    assert SshPublicKey.objects.exists()
    page.get_by_role("button", name="Remove the key").click()
    expect(page.locator(".messages")).to_contain_text("SSH key laptop removed")
    assert not SshPublicKey.objects.exists()


def test_it_copies_a_new_token(page, login, user):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login()
    page.goto("/profile/")
    page.fill("#token-name", "my-script")
    page.get_by_role("button", name="Create application token").click()
    token = page.locator("#new-token").inner_text()
    page.locator('[data-copy="new-token"]').click()
    expect(page.locator('[data-copy="new-token"]')).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == token


def test_it_browses_uploads_into_and_deletes_from_a_shared_storage(page, login, area, tmp_path):
    from tests.factories import create_storage

    team = tmp_path / "team"
    (team / "datasets").mkdir(parents=True)
    create_storage("team", kind="hostPath", server="", path=str(team), mount_path="/mnt/team")
    upload = tmp_path / "labels.csv"
    upload.write_text("id,label\n")
    login()
    page.goto("/storage/")
    page.locator('[data-storage="team"]').click()
    page.locator('tr[data-entry="datasets"] a').click()
    expect(page.locator("#fs-uri-path")).to_have_text("/mnt/team/datasets")
    page.set_input_files("#upload-files", str(upload))
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Uploaded 1 file.")
    assert (team / "datasets" / "labels.csv").read_text() == "id,label\n"
    page.locator('tr[data-entry="labels.csv"]').get_by_role("button", name="Delete").click()
    expect(page.locator("main")).to_contain_text("Everyone who uses this storage loses it")
    assert (team / "datasets" / "labels.csv").exists()
    page.get_by_role("button", name="Delete it").click()
    expect(page.locator(".messages")).to_contain_text("Removed labels.csv.")
    assert not (team / "datasets" / "labels.csv").exists()
