"""A JSON model field that keeps the order of object keys on every database.

PostgreSQL's jsonb (Django's JSONField there) sorts an object's keys, by length then bytes. A job's
task roles and port labels must keep the order their author wrote them: it is the order of
PAI_TASK_ROLE_LIST, of the PAI_TASK_ROLE_<n>_* numbering and of PAI_CONTAINER_HOST_PORT_LIST.
So these values are stored as JSON text. Nothing queries inside them.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models


class OrderedJSONField(models.TextField):
    description = "JSON stored as text, object key order kept"
    # For django-stubs: the Python values are JSON values, not str.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    def get_prep_value(self, value: Any) -> str | None:
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def value_to_string(self, obj: models.Model) -> str:
        return self.get_prep_value(self.value_from_object(obj)) or ""
