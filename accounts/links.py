"""Links to the portal as its users reach it (PAI_PUBLIC_URL), for what leaves a request: mails,
webhooks, alerts, OpenID Connect's redirects. A job's link: `Job.public_url()`."""

from __future__ import annotations

from urllib.parse import urljoin

from django.conf import settings


def public_url(path: str) -> str:
    """`path` (a site path: `reverse`'s, with its query) on the portal as users reach it."""
    return urljoin(settings.PAI_PUBLIC_URL.rstrip("/") + "/", path.lstrip("/"))
