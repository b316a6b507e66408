"""Storage configs as an admin declares them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.factories import create_storage


@pytest.fixture
def make_storage(db) -> Callable[..., Any]:
    return create_storage
