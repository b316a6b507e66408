"""The ID token says who signed in, so the portal believes only one signed with the provider's key
(its JWKS), issued by it, for this client, not expired, carrying this sign-in's nonce. Each
forgery below is refused by accounts.oidc.id_token_claims; one swapped into a real sign-in ends on
the error page with nobody made and nobody signed in."""

from __future__ import annotations

import base64
import functools
import hmac
import json
import time
from typing import Any

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from joserfc import jwt
from joserfc.jwk import RSAKey

from accounts import oidc
from tests.oidc.conftest import CLIENT_ID, rs256_key, signing_key
from tests.oidc.test_oidc_signin import local, start

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

NONCE = "the-nonce-of-this-sign-in"


@functools.cache
def evil_key() -> RSAKey:
    """Another key under the same kid (made on first use, as signing_key is)."""
    return rs256_key()


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def claims_for(issuer: str, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": issuer, "sub": "carol", "aud": CLIENT_ID, "iat": now, "exp": now + 300, "nonce": NONCE}
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


def signed(claims: dict[str, Any], key: Any = None, alg: str = "RS256") -> str:
    return jwt.encode({"alg": alg, "kid": "test-key"}, claims, key or signing_key(), algorithms=[alg])


def unsigned(claims: dict[str, Any]) -> str:
    return f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(claims)}."


def hs256_with_the_public_key(claims: dict[str, Any]) -> str:
    """The old confusion: HMAC keyed with the provider's public key, which anyone can fetch."""
    signing_input = f"{b64({'alg': 'HS256', 'kid': 'test-key'})}.{b64(claims)}"
    mac = hmac.digest(signing_key().as_pem(private=False), signing_input.encode(), "sha256")
    return f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def validated(id_token: str) -> dict[str, Any]:
    return oidc.id_token_claims({"access_token": "at", "token_type": "Bearer", "id_token": id_token}, nonce=NONCE)


def test_a_token_the_provider_signed_for_this_client_is_believed(oidc_provider):
    assert validated(signed(claims_for(oidc_provider.issuer)))["sub"] == "carol"


FORGERIES = {
    "signed by another key": (lambda issuer: signed(claims_for(issuer), evil_key()), "not signed by the provider"),
    "alg none": (lambda issuer: unsigned(claims_for(issuer)), "not signed by the provider"),
    "HS256 keyed with the public key": (
        lambda issuer: hs256_with_the_public_key(claims_for(issuer)),
        "not signed by the provider",
    ),
    "for another client": (lambda issuer: signed(claims_for(issuer, aud="another-client")), "claim “aud”"),
    "from another issuer": (lambda issuer: signed(claims_for("https://evil.example")), "claim “iss”"),
    "expired": (lambda issuer: signed(claims_for(issuer, exp=int(time.time()) - 3600)), "has expired"),
    "without an expiry": (lambda issuer: signed(claims_for(issuer, exp=None)), "claim “exp”"),
    "of another sign-in (nonce)": (lambda issuer: signed(claims_for(issuer, nonce="another")), "claim “nonce”"),
}


@pytest.mark.parametrize("forgery", FORGERIES, ids=list(FORGERIES))
def test_a_forged_id_token_is_refused(oidc_provider, forgery):
    make, why = FORGERIES[forgery]
    with pytest.raises(oidc.SignInFailed, match=why):
        validated(make(oidc_provider.issuer))


def test_a_forged_id_token_in_a_real_sign_in_ends_on_the_error_page_with_nobody_signed_in(
    client, oidc_provider, monkeypatch
):
    app = oidc.client()
    real_exchange = app.fetch_access_token

    def swapped(**params: Any) -> dict[str, Any]:
        token = dict(real_exchange(**params))
        payload = token["id_token"].split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        token["id_token"] = signed(claims, evil_key())  # the provider's claims, another key
        return token

    monkeypatch.setattr(app, "fetch_access_token", swapped)
    response = client.get(local(oidc_provider.sign_in(start(client), "carol")))
    assert response.status_code == 400
    assert "Sign-in with 127.0.0.1 failed: the ID token is not signed by the provider" in response.content.decode()
    assert SESSION_KEY not in client.session
    assert not get_user_model().objects.exists()
