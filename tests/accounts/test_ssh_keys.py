"""Profile SSH public keys (issue 36): read with asyncssh, added and removed on the profile page."""

import asyncssh
import pytest
from django.test import Client

from accounts.models import SshPublicKey
from accounts.ssh_keys import KeyRefused, add_key, parse_public_key

pytestmark = pytest.mark.django_db


def public_key(comment: str = "me@laptop") -> str:
    return asyncssh.generate_private_key("ssh-ed25519", comment=comment).export_public_key("openssh").decode()


@pytest.fixture
def client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_reads_a_key_and_its_fingerprint():
    text = public_key()
    parsed = parse_public_key(text)
    assert parsed.line == text.strip()
    assert parsed.fingerprint.startswith("SHA256:")
    assert parsed.comment == "me@laptop"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ssh-ed25519 AAAAnot-base64",
        "hello",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
    ],
)
def test_it_refuses_what_is_not_one_public_key(text):
    with pytest.raises(KeyRefused):
        parse_public_key(text)


def test_it_refuses_two_keys_in_one_paste():
    with pytest.raises(KeyRefused):
        parse_public_key(public_key() + public_key())


def test_it_refuses_the_same_key_twice(user):
    text = public_key()
    add_key(user, text)
    with pytest.raises(KeyRefused, match="already"):
        add_key(user, text)


def test_it_adds_a_key_on_the_profile_page_titled_by_its_comment(client, user):
    response = client.post("/profile/ssh-keys", {"key": public_key("work@desk"), "title": ""})
    assert response.status_code == 302
    key = SshPublicKey.objects.get(user=user)
    assert key.title == "work@desk"
    page = client.get("/profile/").content.decode()
    assert key.fingerprint in page


def test_it_shows_a_refused_key_beside_its_field_with_a_400(client, user):
    response = client.post("/profile/ssh-keys", {"key": "ssh-rsa nonsense", "title": "x"})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'aria-invalid="true"' in page and "not one SSH public key" in page
    assert not SshPublicKey.objects.exists()


def test_it_removes_only_the_users_own_key(client, user, other_user):
    mine = add_key(user, public_key())
    theirs = add_key(other_user, public_key())
    client.post(f"/profile/ssh-keys/{theirs.pk}/remove")
    assert SshPublicKey.objects.filter(pk=theirs.pk).exists()
    client.post(f"/profile/ssh-keys/{mine.pk}/remove")
    assert not SshPublicKey.objects.filter(pk=mine.pk).exists()


def test_it_asks_before_removing_a_key(client, user):
    key = add_key(user, public_key(), "laptop")
    page = client.get(f"/profile/ssh-keys/{key.pk}/remove").content.decode()
    assert "Remove the SSH key <strong>laptop</strong>" in page
    assert SshPublicKey.objects.filter(pk=key.pk).exists()


def test_it_names_the_key_it_removed(client, user):
    key = add_key(user, public_key(), "laptop")
    page = client.post(f"/profile/ssh-keys/{key.pk}/remove", follow=True).content.decode()
    assert "SSH key laptop removed" in page
