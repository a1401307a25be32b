"""The embedded default database holds under concurrent writes of different people: waiting for SQLite's write
lock, never "database is locked" as a 500 (tems/settings.py, the SQLite OPTIONS)."""

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client

STUDENTS = 9
TAPS = 5

pytestmark = pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"),
                                reason="SQLite's locking only")


def test_the_sqlite_database_is_configured_for_concurrent_writers():
    options = settings.DATABASES["default"]["OPTIONS"]
    assert options["transaction_mode"] == "IMMEDIATE" and options["timeout"] >= 5


@pytest.mark.django_db(transaction=True)
def test_students_asking_for_verification_mails_at_once_get_no_5xx(mailoutbox):
    clients = []
    for n in range(STUDENTS):
        user = User.objects.create_user(f"student{n}", email=f"student{n}@uni.test", password="a-Long-pass-2026")
        client = Client(raise_request_exception=False)
        client.force_login(user)
        clients.append(client)
    start = Barrier(STUDENTS)

    def taps(client: Client) -> list[int]:
        try:
            start.wait()
            return [client.post("/accounts/verify-email/").status_code for _ in range(TAPS)]
        finally:
            connections.close_all()  # this thread's own connection

    with ThreadPoolExecutor(STUDENTS) as pool:
        statuses = Counter(status for answers in pool.map(taps, clients) for status in answers)
    assert statuses == {302: STUDENTS * TAPS}
    # Each account's mail budget held too: three links an hour, not one more.
    assert len(mailoutbox) == STUDENTS * settings.TEMS_VERIFICATION_MAILS_PER_HOUR
