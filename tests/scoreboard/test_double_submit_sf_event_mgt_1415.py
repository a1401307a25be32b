"""sf_event_mgt #1415: a form sent twice within seconds left one confirmed and one unconfirmed record. The same
tap (one idempotency key: the browser resends the form) reaches the server twice at once."""

from __future__ import annotations

import pytest

from lab.techniques.registration import naive
from registrations import selectors
from registrations.models import CONFIRMED
from tests.race import WindowHeldOpen, race
from tests.scoreboard.scenario import TEMS, Report, event, new_key, tems_registration, variants

REPORT = Report(
    peer="sf_event_mgt (TYPO3)",
    issue="#1415",
    url="https://github.com/derhansen/sf_event_mgt/issues/1415",
    wrong="A registration form sent twice within seconds stored two records, one confirmed and one not.",
    scenario="One tap's request sent twice at the same instant (same idempotency key): one confirmed "
             "registration is stored, and both requests get the first answer byte for byte.",
    broken="Broken variant: the lab's naive technique, its idempotency record and \"already registered?\" "
           "read before the writes.",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_a_form_sent_twice_stores_one_confirmed_registration(ddb, variant):
    open_day = event(capacity=5)
    technique = tems_registration if variant == TEMS else naive
    window = WindowHeldOpen()
    key = new_key()
    answers = race([lambda: technique(event_id=open_day.event_id, user_id="ann", idempotency_key=key,
                                      pause=window if variant != TEMS else lambda: None)
                    for _ in range(2)])
    stored = [r for r in selectors.registration_list(user_id="ann") if r["event_id"] == open_day.event_id]
    assert [r["status"] for r in stored] == [CONFIRMED], f"stored: {[r['status'] for r in stored]}"
    assert answers[0].body == answers[1].body, "the two sends were answered differently"
