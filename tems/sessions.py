"""Django's database sessions, with the one read every request makes written once (``SESSION_ENGINE``).

The store is ``django.contrib.sessions.backends.db`` in every respect (same table, same rows, same expiry, same
saving and flushing, so logging out deletes the row and the cookie is worth nothing after it), except that
loading a session runs a statement written once per process instead of compiling the ORM query anew on every
request (``tems.lean_select``: compiling it is Python work on every request's path, the statement never changes).

Rejected: the ``signed_cookies`` engine (no read at all, but a logged-out or stolen cookie stays valid until it
expires: logging out must end the session on the server); ``cached_db`` with the per-process memory cache (a
session flushed on one worker would live on in the others' caches: the same flaw, for minutes).
"""

from __future__ import annotations

import functools

from django.contrib.sessions.backends import db
from django.db import connections, router
from django.utils import timezone

from tems.lean_select import fetch_one, quoted


@functools.cache
def _load_statement(model, using: str) -> str:
    meta = model._meta
    key, data, expiry = (meta.get_field(name).column for name in ("session_key", "session_data", "expire_date"))
    return (f"SELECT {quoted(using, data)} FROM {quoted(using, meta.db_table)} "
            f"WHERE {quoted(using, key)} = %s AND {quoted(using, expiry)} > %s")


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        if not self.session_key:
            # The ORM's "session_key IS NULL" matches no row either: nothing to ask.
            self._session_key = None
            return None
        model = self.model
        using = router.db_for_read(model)
        connection = connections[using]
        meta = model._meta
        params = [meta.get_field("session_key").get_db_prep_value(self.session_key, connection),
                  meta.get_field("expire_date").get_db_prep_value(timezone.now(), connection)]
        row = fetch_one(using, _load_statement(model, using), params)
        if row is None:
            self._session_key = None  # as Django's store does: saving the session then makes a new key
            return None
        return model(session_key=self.session_key, session_data=row[0])
