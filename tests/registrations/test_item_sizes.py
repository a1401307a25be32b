"""Every item a first registration writes stays under 1 KB (issue 13): one write unit per item, two in a
transaction, on the hottest partition of the table.

The items are the very ones PynamoDB sends (``LabelledTransaction.transact_items``, captured as each
registration commits); the event's item, which the transaction updates, is measured as stored afterwards,
since an update is billed by the larger of the item before and after it.
"""

import json

import pytest

from registrations.events.models import Event
from registrations.write_rules import CLAIM, IDEMPOTENCY
from tems.dynamo import boto3_client, current_config
from tems.transactions import LabelledTransaction
from tests.registrations.helpers import make_event, new_key, register
from tests.support.item_size import KB, item_size

# Django's longest username and the event form's longest title and location: the worst a student can type.
LONG_NAME = "élodie.van-der-berghe-" + "x" * 128
LONG_TITLE = "Conférence " + "T" * 189
LOCATION = "Amphithéâtre Marie-Curie, bâtiment B, 2e étage"
# A description of a few sentences, as events have them. It lives on the event's item, which every registration
# updates (the seat counter): the item stays under 1 KB while title, location and description stay under about
# 650 bytes together; a longer description costs one more write unit per started KB on every registration.
DESCRIPTION = "Bring a laptop and a charged phone; we start on time and end with questions. " * 4
USER_ID = "0b6f3e1c-41d5-4a2e-9c7e-5d1f2a3b4c5d"  # the shape of tems.identity.user_key


@pytest.fixture
def sent(monkeypatch):
    """The TransactItems of every registration transaction committed, as lists of (label, item) pairs."""
    seen: list[list[tuple[str, dict]]] = []
    original = LabelledTransaction.commit

    def spy(self):
        if {IDEMPOTENCY, CLAIM} <= set(self.sent_order):
            seen.append(list(zip(self.sent_order, self.transact_items(), strict=True)))
        return original(self)

    monkeypatch.setattr(LabelledTransaction, "commit", spy)
    return seen


def written_item(operation: dict) -> dict:
    (_kind, body), = operation.items()
    return body["Item"]


def stored_event(event_id: str) -> dict:
    pk, sk = Event.key_for(event_id)
    return boto3_client().get_item(TableName=current_config().table_name,
                                   Key={"PK": {"S": pk}, "SK": {"S": sk}})["Item"]


def test_a_confirmed_and_a_waitlisted_registration_write_items_under_1_kb(moto_ddb, sent):
    event = make_event(capacity=1, title=LONG_TITLE, location=LOCATION, description=DESCRIPTION)
    confirmed = register(event.event_id, USER_ID, new_key(), user_name=LONG_NAME)
    waitlisted = register(event.event_id, USER_ID.replace("0b6f", "1c7a"), new_key(), user_name=LONG_NAME)
    assert (confirmed.data["status"], waitlisted.data["status"]) == ("confirmed", "waitlisted")
    # The confirmation, then the waitlist's full seat condition (refused, nothing written), then the waitlist.
    confirm, waitlist = sent[0], sent[-1]
    sizes = {}
    for name, transaction in (("confirmed", confirm), ("waitlisted", waitlist)):
        for label, operation in transaction:
            if "Put" in operation:
                sizes[f"{name} {label}"] = item_size(written_item(operation))
    sizes["event (updated by both)"] = item_size(stored_event(event.event_id))
    # Confirmed: 5 puts. Waitlisted: its waitlist entry instead of the event-side copy (the entry is that copy,
    # with the attendee index key and the student's name). Then the event's item.
    assert len(sizes) == 5 + 5 + 1 and "waitlisted waitlist_entry" in sizes, sizes
    assert max(sizes.values()) < KB, sizes


def test_the_stored_answer_carries_no_qr_drawing(moto_ddb, sent):
    event = make_event(capacity=3, title=LONG_TITLE)
    outcome = register(event.event_id, USER_ID, new_key(), user_name=LONG_NAME)
    record = dict(sent[0])[IDEMPOTENCY]["Put"]["Item"]
    body = json.loads(record["response_body"]["S"])
    assert body == outcome.data and "qr_svg" not in body and "<svg" not in record["response_body"]["S"]
    assert item_size(record) < KB
