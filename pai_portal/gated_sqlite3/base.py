"""Django's SQLite backend whose write transactions wait in line (writers.py) instead of polling.

Every `transaction.atomic()` block starts with BEGIN IMMEDIATE here (settings: transaction_mode),
so it is where the portal writes: the outermost block takes its turn first and gives it back when
its COMMIT or ROLLBACK is done (or its connection closes). Writes outside a block (autocommit) and
reads take no turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.backends.sqlite3 import base, creation

from pai_portal.gated_sqlite3.writers import WritersLine, line_of, writers_file


class DatabaseCreation(creation.DatabaseCreation):
    def _destroy_test_db(self, test_database_name: str, verbosity: int) -> None:
        super()._destroy_test_db(test_database_name, verbosity)  # type: ignore[misc]  # private in django-stubs
        if not self.is_in_memory_db(test_database_name):
            Path(writers_file(test_database_name)).unlink(missing_ok=True)


class DatabaseWrapper(base.DatabaseWrapper):
    creation_class = DatabaseCreation

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turn: WritersLine | None = None

    def _start_transaction_under_autocommit(self) -> None:
        name = str(self.settings_dict["NAME"])
        if self._turn is None and not self.is_in_memory_db():
            line = line_of(name)
            if line.enter(float(self.settings_dict["OPTIONS"].get("timeout", 5))):
                self._turn = line
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # private in django-stubs
        except BaseException:
            self._end_turn()
            raise

    def _end_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is not None:
            turn.leave()

    def _commit(self) -> None:
        try:
            super()._commit()  # type: ignore[misc]  # private in django-stubs
        finally:
            self._end_turn()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]  # private in django-stubs
        finally:
            self._end_turn()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]  # private in django-stubs
        finally:
            self._end_turn()
