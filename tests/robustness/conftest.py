"""The API's token clients and the pages' signed-in clients, for tests that use both."""

from tests.api.conftest import alice  # noqa: F401  (fixture)
from tests.web.conftest import alice_client  # noqa: F401  (fixture)
