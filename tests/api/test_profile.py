"""The profile page lists the user's tokens, creates application tokens (shown once) and revokes them."""

import pytest

from accounts.models import Token
from accounts.tokens import issue_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(client, user):
    client.force_login(user)
    return client


def test_it_lists_the_users_tokens_by_prefix(browser, user):
    _, token = issue_token(user, name="laptop")
    page = browser.get("/profile/").content.decode()
    assert "laptop" in page
    assert token.key_prefix in page


def test_it_does_not_list_other_users_tokens(browser, other_user):
    issue_token(other_user, name="bobs-token")
    assert "bobs-token" not in browser.get("/profile/").content.decode()


def test_it_shows_a_new_application_token_once(browser, user):
    browser.post("/profile/tokens/application", {"name": "ci"})
    token = Token.objects.get(user=user, name="ci")
    first = browser.get("/profile/").content.decode()
    assert 'id="new-token"' in first
    assert token.key_prefix in first
    assert 'id="new-token"' not in browser.get("/profile/").content.decode()


def test_it_asks_before_revoking_a_token(browser, user):
    _, token = issue_token(user, name="ci-nightly")
    page = browser.get(f"/profile/tokens/{token.pk}/revoke").content.decode()
    assert "Revoke the token <strong>ci-nightly</strong>" in page
    assert Token.objects.filter(pk=token.pk).exists()


def test_it_revokes_a_token_from_the_page_and_names_it(browser, user):
    _, token = issue_token(user, name="ci-nightly")
    response = browser.post(f"/profile/tokens/{token.pk}/revoke", follow=True)
    assert not Token.objects.filter(pk=token.pk).exists()
    assert "Token ci-nightly" in response.content.decode()


def test_it_cannot_revoke_another_users_token(browser, other_user):
    _, token = issue_token(other_user)
    browser.post(f"/profile/tokens/{token.pk}/revoke")
    assert Token.objects.filter(pk=token.pk).exists()


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get("/profile/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]
