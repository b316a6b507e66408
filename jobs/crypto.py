"""Encryption at rest for job secrets and SSH private keys.

The key is PAI_ENCRYPTION_KEY when set, else derived from SECRET_KEY, so a fresh install needs
no extra setup. Fernet gives authenticated encryption (a tampered value fails to decrypt).
"""

import base64
import hashlib

from cryptography.fernet import Fernet
from django.conf import settings


def _fernet() -> Fernet:
    material = settings.PAI_ENCRYPTION_KEY or settings.SECRET_KEY
    key = base64.urlsafe_b64encode(hashlib.sha256(("pai-portal:" + material).encode()).digest())
    return Fernet(key)


def encrypt_text(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode() if plain else ""


def decrypt_text(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode() if token else ""
