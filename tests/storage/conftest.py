"""Storage configs as an admin declares them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clusters.models import StorageConfig


@pytest.fixture
def make_storage(db) -> Callable[..., StorageConfig]:
    def make(name: str = "team", **fields: Any) -> StorageConfig:
        fields.setdefault("kind", StorageConfig.Kind.NFS)
        fields.setdefault("server", "10.0.0.5")
        fields.setdefault("path", f"/export/{name}")
        config = StorageConfig(name=name, **fields)
        config.full_clean()
        config.save()
        return config

    return make
