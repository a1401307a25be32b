"""The two SQL reads every logged-in request makes, written once per process instead of compiled per request.

Each request of a logged-in person reads its session row and its user row (with the identity joined). Through
the ORM each of those is a fresh query compilation, Python work many times the cost of running the statement
itself, on every request (docs/PERFORMANCE.md has the figures). The statements never change, only the key, so
this module writes them once from the models' own
metadata (table and column names, quoted by the connection) and turns the rows back into model instances the
way the ORM does: the fields' parameters prepared by the fields, the columns read through the backend's and the
fields' converters. Nothing about what is read, or when, changes: the same rows, at the same moment, every
request.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.models import Model

_lock = threading.Lock()
_columns: dict[tuple[type[Model], str, str], ModelColumns] = {}


class ModelColumns:
    """A model's concrete columns under a table alias: the SELECT list and how to rebuild an instance."""

    def __init__(self, model: type[Model], alias: str, using: str) -> None:
        connection = connections[using]
        quote = connection.ops.quote_name
        self.model = model
        self.using = using
        self.fields = list(model._meta.concrete_fields)
        self.names = [field.attname for field in self.fields]
        self.select = ", ".join(f"{quote(alias)}.{quote(field.column)}" for field in self.fields)
        # What SQLCompiler.get_converters finds for the same columns: booleans and datetimes on SQLite, UUIDs
        # stored as text, and so on, so an instance built here equals the one the ORM would build. They are
        # bound to the connection of the thread that built this; each call passes its own, and what they read
        # of the first (its time zone) comes from the settings, the same for every thread.
        self._converters = []
        for index, field in enumerate(self.fields):
            column = field.get_col(alias)
            converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if converters:
                self._converters.append((index, converters, column))

    def __len__(self) -> int:
        return len(self.fields)

    def instance(self, values: Sequence[Any]) -> Model:
        values = list(values)
        connection = connections[self.using]
        for index, converters, column in self._converters:
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        return self.model.from_db(self.using, self.names, values)


def model_columns(model: type[Model], alias: str, using: str) -> ModelColumns:
    key = (model, alias, using)
    found = _columns.get(key)
    if found is None:
        with _lock:
            found = _columns.setdefault(key, ModelColumns(model, alias, using))
    return found


def quoted(using: str, *names: str) -> str:
    """``names`` quoted for the database ``using``, joined by dots (``alias.column``)."""
    quote = connections[using].ops.quote_name
    return ".".join(quote(name) for name in names)


def fetch_one(using: str, sql: str, params: Sequence[Any]) -> tuple | None:
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()
