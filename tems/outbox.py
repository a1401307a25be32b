"""The transactional outbox: side effects leave DynamoDB only as messages written in the same transaction.

A change that must tell the outside world (send a confirmation e-mail, notify the promoted student, finish a
promotion, ...) adds an ``OutboxMessage`` to its own TransactWriteItems, so the message exists if and only if
the change happened. ``outbox_relay`` (run by ``manage.py relay_outbox``, and in the background by ``make run``)
queries the ``OUTBOX`` collection in GSI1 for messages that are *due*, claims each with a conditional lease,
hands it to the handler named for its type in ``settings.OUTBOX_HANDLERS`` and deletes it once handled.

GSI1SK is the time a message is next due (then its id): a new message is due at once; a claim moves it to the
end of its lease; a failed handler moves it on by a per-message backoff. So a message whose handler keeps
failing waits its turn behind everything else and a backlog of them never blocks the rest.

Delivery is at least once (a relay that dies after the side effect but before the delete leaves the message to
be handled again after the lease). Exactly one *effect* per message is the receiver's part, keyed by the
message id: mails carry ``Message-ID`` derived from it (``message_id_header``), so a mail client or list
drops the repeat, and every other handler is idempotent by the message id or by design.
A message carries the id of the request that wrote it; its handler runs acting for that request (its log lines,
the messages it writes and the mail's ``X-Request-ID`` carry the id), so a tap can be followed to the mail.
Each relay pass writes one line with its metrics: messages delivered and the age of the oldest one due.
Claim, release and delete are one-item transactions: their ClientRequestToken makes a retry after a lost
answer a success instead of a refused condition.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string
from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute

from tems import telemetry
from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableModel
from tems.transactions import LabelledTransaction, TransactionCancelled


class OutboxMessage(TableModel):
    """``OUTBOX#<message_id>`` / ``MESSAGE``, listed oldest first in GSI1 under ``OUTBOX#<bucket>``.

    The index key is spread over ``BUCKETS`` partitions by the message id, so the messages of a burst of
    registrations (one each) do not all land on one index partition (~1,000 writes/s); the relay queries every
    bucket.
    """

    SK = "MESSAGE"
    COLLECTION = "OUTBOX"
    # 16 index partitions carry ~16,000 messages/s; a relay pass costs one Query per bucket.
    BUCKETS = 16

    sk = UnicodeAttribute(range_key=True, attr_name="SK", default=SK)
    message_id = UnicodeAttribute()
    message_type = UnicodeAttribute()
    payload = UnicodeAttribute()  # JSON, so a relay needs no knowledge of the producing app's models
    created_at = UTCDateTimeAttribute(default=utcnow)
    # Set by the relay that is delivering it: nobody else touches the message until the lease runs out.
    claimed_by = UnicodeAttribute(null=True)
    lease_until = UTCDateTimeAttribute(null=True)
    attempts = NumberAttribute(default=0)
    # The request that wrote the message (tems.telemetry); absent on messages written outside a request.
    request_id = UnicodeAttribute(null=True)

    pending = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK")  # ``collection_for`` the message id
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    @classmethod
    def key_for(cls, message_id: str) -> tuple[str, str]:
        return f"OUTBOX#{message_id}", cls.SK

    @classmethod
    def collection_for(cls, message_id: str) -> str:
        return f"{cls.COLLECTION}#{int(message_id[:4], 16) % cls.BUCKETS:02d}"

    @classmethod
    def collections(cls) -> list[str]:
        """Every index partition a message may be listed under."""
        return [f"{cls.COLLECTION}#{bucket:02d}" for bucket in range(cls.BUCKETS)]

    @classmethod
    def listed(cls, condition=None, *, limit: int | None = None) -> list[OutboxMessage]:
        """The messages of every bucket whose listing key meets ``condition``, in listing-key order (oldest due
        first), at most ``limit``: one Query per bucket, each itself limited."""
        found: list[OutboxMessage] = []
        for collection in cls.collections():
            found += cls.pending.query(collection, condition, limit=limit)
        found.sort(key=lambda message: message.gsi1sk)
        return found[:limit] if limit is not None else found

    @staticmethod
    def listing_key(due: datetime, message_id: str) -> str:
        # Fixed-width UTC so that string order is time order (isoformat drops zero microseconds).
        return f"{due.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{message_id}"

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.payload)


def outbox_message(*, message_type: str, payload: dict[str, Any], now: datetime | None = None,
                   message_id: str | None = None) -> OutboxMessage:
    """A new message, to be saved inside the transaction whose change it announces.

    ``message_id`` (hex, at least four digits) for a message that must be the same on every try: a fan-out
    derives it from what it announces and saves it under ``attribute_not_exists``, and the mail's Message-ID
    follows from it.
    """
    now = now or utcnow()
    message_id = message_id or uuid.uuid4().hex
    return OutboxMessage(
        *OutboxMessage.key_for(message_id),
        message_id=message_id, message_type=message_type,
        payload=json.dumps(payload, sort_keys=True, default=str),
        created_at=now, gsi1pk=OutboxMessage.collection_for(message_id),
        gsi1sk=OutboxMessage.listing_key(now, message_id), request_id=telemetry.current_request_id(),
    )


logger = logging.getLogger(__name__)
# Longer than any handler should take (an SMTP round trip); short enough that a crashed relay's messages go out
# again within a minute.
LEASE = timedelta(seconds=60)
# After a failed attempt a message waits 30 s, then twice as long each time, up to an hour: a receiver that is
# down for a while is not hammered, and one that is back gets the message within the hour.
RETRY_BASE = timedelta(seconds=30)
RETRY_MAX = timedelta(hours=1)
# A message still undelivered this long after it was written means a receiver or the relay is stuck:
# ``check_invariants`` reports it.
STALE_AFTER = timedelta(minutes=15)
# ISO timestamps sort before this character, so "<due key> <= <now>#~" means "due by now, any id".
_AFTER_ANY_ID = "#~"

Handler = Callable[[OutboxMessage], None]

CLAIM = "claim"
RELEASE = "release"
DELETE = "delete"


@dataclass
class RelayReport:
    delivered: int = 0
    failed: int = 0
    skipped: int = 0  # claimed by another relay, or of a type no handler is configured for


def message_id_header(message: OutboxMessage) -> str:
    """The RFC 5322 Message-ID of the mail a message produces: the same for every delivery of that message."""
    _, address = parseaddr(settings.DEFAULT_FROM_EMAIL)
    domain = address.rpartition("@")[2] or "tems.invalid"
    return f"<outbox.{message.message_id}@{domain}>"


def mail_headers(message: OutboxMessage) -> dict[str, str]:
    """The headers of the mail a message produces: its ``Message-ID`` and the id of the request behind it."""
    headers = {"Message-ID": message_id_header(message)}
    if message.request_id:
        headers[telemetry.REQUEST_ID_HEADER] = message.request_id
    return headers


def outbox_pending(*, limit: int = 100, now: datetime | None = None) -> list[OutboxMessage]:
    """The messages due by ``now``, the longest due first (the index is eventually consistent: a message that
    just became due may wait for the next pass)."""
    due_by = OutboxMessage.listing_key(now or utcnow(), "")[:-1] + _AFTER_ANY_ID
    return OutboxMessage.listed(OutboxMessage.gsi1sk <= due_by, limit=limit)


def configured_handlers() -> dict[str, Handler]:
    return {message_type: import_string(path) for message_type, path in settings.OUTBOX_HANDLERS.items()}


def configured_periodic_jobs() -> dict[str, Callable[[], Any]]:
    return {name: import_string(path) for name, path in settings.RELAY_PERIODIC_JOBS.items()}


def run_periodic_jobs(jobs: Mapping[str, Callable[[], Any]] | None = None) -> dict[str, bool]:
    """Run each job the apps registered (settings.RELAY_PERIODIC_JOBS) once; {name: ran without error}. A job
    that fails is logged and tried again at the next run: one must not stop the others or the relay."""
    jobs = configured_periodic_jobs() if jobs is None else jobs
    outcome = {}
    for name, job in jobs.items():
        try:
            job()
        except Exception:  # noqa: BLE001 - logged; the relay goes on delivering
            logger.exception("relay job %s failed", name)
            outcome[name] = False
        else:
            outcome[name] = True
    return outcome


def outbox_relay(*, handlers: Mapping[str, Handler] | None = None, limit: int = 100, relay_id: str | None = None,
                 now: Callable[[], datetime] = utcnow) -> RelayReport:
    """One pass over the due messages: claim, handle, delete (or put back with a backoff). Returns the tally.

    Writes one line for the pass, with ``OutboxDelivered`` and ``OutboxLagSeconds``: how long the oldest message
    found due has waited since it was written (0 when none is due). A message waiting out the backoff of a
    failed delivery is not listed until it is due again, when its whole age shows.
    """
    handlers = configured_handlers() if handlers is None else handlers
    relay_id = relay_id or uuid.uuid4().hex
    report = RelayReport()
    with telemetry.scope("outbox_relay") as current:
        started = now()
        pending = outbox_pending(limit=limit, now=started)
        oldest = min((message.created_at for message in pending), default=started)
        telemetry.measure(telemetry.OUTBOX_LAG_SECONDS, round(max((started - oldest).total_seconds(), 0.0), 3))
        for message in pending:
            with telemetry.acting_for(message.request_id):
                _deliver(message, handlers, relay_id=relay_id, now=now, report=report)
        telemetry.count(telemetry.OUTBOX_DELIVERED, n=report.delivered)
        current.fields.update(delivered=report.delivered, failed=report.failed, skipped=report.skipped)
    return report


def _deliver(message: OutboxMessage, handlers: Mapping[str, Handler], *, relay_id: str,
             now: Callable[[], datetime], report: RelayReport) -> None:
    handler = handlers.get(message.message_type)
    if handler is None or not _claim(message, relay_id=relay_id, now=now()):
        report.skipped += 1
        return
    try:
        handler(message)
    except Exception:  # noqa: BLE001 - one bad message must not stop the others; it is retried after a backoff
        logger.exception("outbox message %s (%s) failed", message.message_id, message.message_type)
        report.failed += 1
        _release(message, relay_id=relay_id, now=now())
        return
    _delete(message, relay_id=relay_id)
    report.delivered += 1


def _mine(relay_id: str):
    return OutboxMessage.claimed_by == relay_id


def _commit(transaction: LabelledTransaction, label: str) -> bool:
    """Commit a one-item transaction; False when its condition failed (the message moved on without us)."""
    try:
        transaction.commit()
    except TransactionCancelled as cancelled:
        if cancelled.failed(label):
            return False
        if cancelled.is_conflict:
            return False  # another relay is writing this message this very moment: it is theirs
        raise
    return True


def _claim(message: OutboxMessage, *, relay_id: str, now: datetime) -> bool:
    until = now + LEASE
    transaction = LabelledTransaction()
    transaction.update(CLAIM, OutboxMessage(*OutboxMessage.key_for(message.message_id)), actions=[
        OutboxMessage.claimed_by.set(relay_id), OutboxMessage.lease_until.set(until),
        OutboxMessage.attempts.add(1), OutboxMessage.gsi1sk.set(OutboxMessage.listing_key(until, message.message_id)),
    ], condition=OutboxMessage.pk.exists()
        & (OutboxMessage.lease_until.does_not_exist() | (OutboxMessage.lease_until < now)))
    # False: delivered and deleted already, or another relay holds it.
    return _commit(transaction, CLAIM)


def _release(message: OutboxMessage, *, relay_id: str, now: datetime) -> None:
    """Put a failed message back, due again after its own backoff, behind everything already due."""
    attempts = int(message.attempts or 0) + 1  # the claim just added one
    due = now + min(RETRY_MAX, RETRY_BASE * 2 ** (attempts - 1))
    transaction = LabelledTransaction()
    transaction.update(RELEASE, OutboxMessage(*OutboxMessage.key_for(message.message_id)), actions=[
        OutboxMessage.lease_until.set(due),
        OutboxMessage.gsi1sk.set(OutboxMessage.listing_key(due, message.message_id)),
    ], condition=_mine(relay_id))
    _commit(transaction, RELEASE)


def _delete(message: OutboxMessage, *, relay_id: str) -> None:
    transaction = LabelledTransaction()
    transaction.delete(DELETE, OutboxMessage(*OutboxMessage.key_for(message.message_id)), condition=_mine(relay_id))
    # False: our lease ran out and another relay took the message over; it will delete it.
    _commit(transaction, DELETE)


def outbox_stale(*, items: list[dict[str, Any]], now: datetime | None = None) -> list[str]:
    """Messages (raw scanned items) written more than ``STALE_AFTER`` ago and still not delivered."""
    cutoff = (now or utcnow()) - STALE_AFTER
    found = []
    for item in items:
        created = UTCDateTimeAttribute().deserialize(item["created_at"]) if "created_at" in item else None
        if created is not None and created < cutoff:
            found.append(f"{item['PK']}: {item.get('message_type')} written {created.isoformat()}, "
                         f"{int(item.get('attempts', 0))} attempt(s), still undelivered")
    return found
