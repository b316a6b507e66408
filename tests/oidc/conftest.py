"""A real OpenID provider for the OpenID Connect tests: the certified `oidc-provider` from npm
(tests/oidc/provider/, installed with `npm ci` when its node_modules is missing) in a node process
of its own on a free port of 127.0.0.1, its client registered for the portal under test (the
`portal_url` fixture: the test client's http://testserver, or a live server's address), the portal
configured for it (PAI_OIDC_*), stopped after each test. It signs with `signing_key()`, which the
tests that forge ID tokens know too.

    accounts (password: password_of(name); a test changes them with provider.update(...))
      carol   carol@example.org   groups: ml-team
      erin    erin@example.org    groups: admingroup
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
import requests
from joserfc.jwk import RSAKey

from tests.conftest import require
from tests.processes import stop

PROVIDER_DIR = Path(__file__).resolve().parent / "provider"
CLIENT_ID = "pai-portal"
CLIENT_SECRET = "portal-client-secret-3"
OIDC_BACKEND = "accounts.oidc.OidcBackend"


def rs256_key() -> RSAKey:
    """A fresh 2048-bit signing key under the provider's key id."""
    return RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})


@functools.cache
def signing_key() -> RSAKey:
    """The provider's key, made when a test first asks (not on import: every test session imports
    this file while collecting, and two 2048-bit keys cost a worker 0.2-0.8 s of CPU)."""
    return rs256_key()


def password_of(name: str) -> str:
    return f"{name}-provider-pw-9"


def accounts() -> dict[str, dict[str, Any]]:
    return {
        "carol": {"password": password_of("carol"), "email": "carol@example.org", "groups": ["ml-team"]},
        "erin": {"password": password_of("erin"), "email": "erin@example.org", "groups": ["admingroup"]},
    }


class WrongPassword(AssertionError):
    """The provider showed its login form again, with its error."""


@dataclass
class OidcProvider:
    issuer: str
    portal: str  # the portal's address, where the provider sends the browser back
    config_path: Path

    def update(self, username: str, **fields: Any) -> None:
        """Change an account as the provider will see it at the next sign-in (it reads the file again)."""
        config = json.loads(self.config_path.read_text())
        config["accounts"][username].update(fields)
        partial = self.config_path.with_suffix(".new")
        partial.write_text(json.dumps(config))
        partial.replace(self.config_path)

    def sign_in(self, authorization_url: str, username: str, password: str | None = None, *, at: Any = None) -> str:
        """Follows the provider's pages as a browser would (`at`: a requests.Session, the provider's
        cookies), signing in on its form when it shows one; returns the portal address it sends the
        browser back to (the callback with code and state)."""
        browser = at or requests.Session()
        url = authorization_url
        for _ in range(12):
            if url.startswith(self.portal):
                return url
            response = browser.get(url, allow_redirects=False, timeout=10)
            if response.is_redirect:
                url = urljoin(url, response.headers["Location"])
                continue
            assert 'id="provider-login"' in response.text, response.text
            login = urljoin(url, f"{urlsplit(url).path}/login")
            typed = password_of(username) if password is None else password
            answer = browser.post(
                login, data={"username": username, "password": typed}, allow_redirects=False, timeout=10
            )
            if not answer.is_redirect:
                raise WrongPassword(answer.text)
            url = urljoin(login, answer.headers["Location"])
        raise AssertionError(f"the provider never sent the browser back (last: {url})")

    def cancel(self, authorization_url: str) -> str:
        """Cancels on the provider's login form; returns where it sends the browser back."""
        browser = requests.Session()
        url = authorization_url
        while not url.startswith(self.portal):
            response = browser.get(url, allow_redirects=False, timeout=10)
            if response.is_redirect:
                url = urljoin(url, response.headers["Location"])
                continue
            abort = urljoin(url, f"{urlsplit(url).path}/abort")
            answer = browser.post(abort, allow_redirects=False, timeout=10)
            url = urljoin(abort, answer.headers["Location"])
        return url


@pytest.fixture(scope="session")
def provider_installed() -> Path:
    """node and the provider's packages (`npm ci` from its package-lock.json the first time)."""
    require(bool(shutil.which("node") and shutil.which("npm")), "node and npm (Debian's nodejs and npm)")
    with (PROVIDER_DIR / "package.json").open() as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install, however many pytest-xdist workers
        if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PROVIDER_DIR, check=True, timeout=600
            )
    return PROVIDER_DIR


@pytest.fixture
def portal_url() -> str:
    """Where the portal is reached (the test client's host); browser tests override it."""
    return "http://testserver"


def _wait_for_issuer(process: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("issuer "):
                issuer = line.split(" ", 1)[1].strip()
                try:
                    if requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2).ok:
                        return issuer
                except requests.RequestException:
                    pass
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"the OpenID provider did not start:\n{log.read_text(errors='replace')}")


@pytest.fixture
def oidc_provider(provider_installed: Path, portal_url: str, settings: Any, tmp_path: Path) -> Iterator[OidcProvider]:
    """The provider running, and the portal configured to sign in with it."""
    config_path = tmp_path / "provider.json"
    config = {
        "port": 0,
        "client": {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uris": [f"{portal_url}/login/oidc/callback/"],
            "post_logout_redirect_uris": [f"{portal_url}/login/"],
        },
        "accounts": accounts(),
        "jwks": {"keys": [signing_key().as_dict(private=True)]},
    }
    config_path.write_text(json.dumps(config))
    log = tmp_path / "provider.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["node", "provider.mjs", str(config_path)],
            cwd=provider_installed,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NODE_ENV": "test"},
        )
    try:
        issuer = _wait_for_issuer(process, log)
        settings.PAI_PUBLIC_URL = portal_url
        settings.PAI_OIDC_ISSUER = issuer
        settings.PAI_OIDC_CLIENT_ID = CLIENT_ID
        settings.PAI_OIDC_CLIENT_SECRET = CLIENT_SECRET
        settings.PAI_DIRECTORY_ADMIN_GROUP = "admingroup"
        if OIDC_BACKEND not in settings.AUTHENTICATION_BACKENDS:
            settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, OIDC_BACKEND]
        yield OidcProvider(issuer=issuer, portal=portal_url, config_path=config_path)
    finally:
        stop(process)
