"""Auth routes: login/logout, legacy v1 token, application tokens, Bearer checks."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Token, hash_token
from accounts.tokens import issue_token
from tests.api.conftest import bearer_client
from tests.factories import password_for

pytestmark = pytest.mark.django_db


def bearer_client_from(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def login(client, username="alice", password=None, path="/api/v2/authn/basic/login", **extra):
    password = password_for(username) if password is None else password
    return client.post(path, {"username": username, "password": password, **extra}, format="json")


def test_it_logs_in_with_a_password_and_answers_user_token_admin(anonymous, user):
    response = login(anonymous)
    assert response.status_code == 200
    assert response.json()["user"] == "alice"
    assert response.json()["admin"] is False
    assert response.json()["token"].startswith("pai_")


def test_it_stores_only_the_hash_of_a_token(anonymous, user):
    raw = login(anonymous).json()["token"]
    token = Token.objects.get(user=user)
    assert token.key_hash == hash_token(raw)
    assert raw not in {token.key_hash, token.key_prefix, token.name}


def test_it_answers_the_legacy_v1_token_route(anonymous, admin_user):
    response = login(anonymous, "root", path="/api/v1/token", expiration=3600)
    assert response.status_code == 200
    assert response.json()["admin"] is True


def test_it_rejects_a_wrong_password_with_incorrect_password_error(anonymous, user):
    response = login(anonymous, password="nope")
    assert response.status_code == 400
    assert response.json()["code"] == "IncorrectPasswordError"


def test_it_rejects_a_login_without_fields_with_invalid_parameters_error(anonymous, user):
    response = anonymous.post("/api/v2/authn/basic/login", {}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_answers_401_without_a_token(anonymous):
    response = anonymous.get("/api/v2/jobs")
    assert response.status_code == 401
    assert response.json()["code"] == "UnauthorizedUserError"


def test_it_answers_401_for_a_bad_token(anonymous, user):
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer pai_not-a-real-token")
    response = anonymous.get("/api/v2/jobs")
    assert response.status_code == 401
    assert response.json()["code"] == "UnauthorizedUserError"


def test_it_answers_401_for_an_expired_token(user):
    client = bearer_client(user)
    Token.objects.filter(user=user).update(expires=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v2/jobs")
    assert response.status_code == 401
    assert response.json()["code"] == "UnauthorizedUserError"


def test_it_revokes_the_token_on_logout(alice):
    assert alice.delete("/api/v2/authn/basic/logout").status_code == 200
    response = alice.get("/api/v2/jobs")
    assert response.status_code == 401
    assert response.json()["code"] == "UnauthorizedUserError"


def test_it_lists_the_callers_tokens_without_their_values(alice, user):
    response = alice.get("/api/v2/tokens")
    assert response.status_code == 200
    (row,) = response.json()["details"]
    assert row["kind"] == "login"
    assert "token" not in row


def test_it_creates_an_application_token_that_authenticates(alice):
    response = alice.post("/api/v2/tokens/application", {"name": "ci"}, format="json")
    assert response.status_code == 200
    assert response.json()["kind"] == "application"
    script = bearer_client_from(response.json()["token"])
    assert script.get("/api/v2/jobs").status_code == 200


def test_it_revokes_a_token_by_its_value(alice):
    raw = alice.post("/api/v2/tokens/application", {}, format="json").json()["token"]
    assert alice.delete(f"/api/v2/tokens/{raw}").status_code == 200
    response = bearer_client_from(raw).get("/api/v2/jobs")
    assert response.status_code == 401
    assert response.json()["code"] == "UnauthorizedUserError"


def test_it_does_not_revoke_another_users_token(alice, other_user):
    _, token = issue_token(other_user)
    response = alice.delete(f"/api/v2/tokens/{token.pk}")
    assert response.status_code == 404
    assert response.json()["code"] == "NoTokenError"
    assert Token.objects.filter(pk=token.pk).exists()


def test_it_refuses_an_application_token_on_an_admin_operation(admin_user):
    script = bearer_client(admin_user, Token.Kind.APPLICATION)
    response = script.post("/api/v2/users", {"username": "carol", "password": "carol-password-9"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_refuses_an_application_token_minting_tokens(user):
    script = bearer_client(user, Token.Kind.APPLICATION)
    response = script.post("/api/v2/tokens/application", {}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_accepts_the_browser_session(client, user):
    client.force_login(user)
    assert client.get("/api/v2/jobs").status_code == 200


def test_it_requires_csrf_for_session_writes(user):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = browser.post("/api/v2/tokens/application", "{}", content_type="application/json")
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_purges_the_users_expired_tokens_on_login(anonymous, user):
    _, old = issue_token(user)
    Token.objects.filter(pk=old.pk).update(expires=timezone.now() - timedelta(days=1))
    login(anonymous)
    assert not Token.objects.filter(pk=old.pk).exists()
