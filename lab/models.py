"""The lab's own items: its run history (``LabRun``) and the slots that bound how many runs go at once."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from pynamodb.attributes import TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import DeleteError, PutError

from tems.clock import utcnow
from tems.dynamo import TableModel
from tems.errors import DomainError

# Runs are teaching material, not records: a week is plenty to compare today's runs side by side.
RUN_TTL = timedelta(days=7)


class LabRun(TableModel):
    """``LAB#<kind>`` / ``RUN#<time>#<id>``: one lab run, its parameters and what it measured."""

    kind = UnicodeAttribute()
    technique = UnicodeAttribute()
    params = UnicodeAttribute()
    result = UnicodeAttribute()
    created_at = UTCDateTimeAttribute(default=utcnow)
    expires_at = TTLAttribute()

    @staticmethod
    def pk_for(kind: str) -> str:
        return f"LAB#{kind}"

    @staticmethod
    def sk_for(created_at, run_id: str) -> str:
        return f"RUN#{created_at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{run_id}"

    @property
    def result_dict(self) -> dict[str, Any]:
        return json.loads(self.result)


# --- how many runs at once -----------------------------------------------------------------------------------
# A run fires up to 100 threads of DynamoDB requests from the web server that serves everyone else, so the whole
# deployment (every server) runs at most LAB_SLOTS at once; a third visitor is told to try again shortly.
LAB_SLOTS = 2
# Longer than the longest run (100 taps with 200 ms of delay, or the barrier's 30 s timeout): a slot outlives its
# run only when the process died holding it, and then the next run takes it over once the lease ran out.
SLOT_LEASE = timedelta(seconds=90)
BUSY_RETRY_AFTER_SECONDS = 5


class LabSlot(TableModel):
    """``LABSLOT`` / ``SLOT#<n>``: one of the ``LAB_SLOTS`` runs allowed at once, while its lease lasts."""

    PK = "LABSLOT"

    holder = UnicodeAttribute()
    lease_expires_at = UTCDateTimeAttribute()
    expires_at = TTLAttribute()  # a dead holder's slot also deletes itself

    @classmethod
    def key_for(cls, slot: int) -> tuple[str, str]:
        return cls.PK, f"SLOT#{slot}"


@contextmanager
def lab_slot(*, slots: int | None = None) -> Iterator[str]:
    """Hold one of the lab's run slots for the ``with`` block; DomainError('busy') when all are taken.

    Each slot is taken by a conditional put (free, or its lease ran out), so servers that share the table never
    hand one slot to two runs, and nothing is kept in process memory. Released by a delete conditioned on still
    being the holder.
    """
    holder = uuid.uuid4().hex
    for slot in range(LAB_SLOTS if slots is None else slots):
        now = utcnow()
        claim = LabSlot(*LabSlot.key_for(slot), holder=holder, lease_expires_at=now + SLOT_LEASE,
                        expires_at=now + SLOT_LEASE)
        try:
            claim.save(condition=LabSlot.pk.does_not_exist() | (LabSlot.lease_expires_at < now))
        except PutError as error:
            if error.cause_response_code != "ConditionalCheckFailedException":
                raise
            continue
        try:
            yield holder
        finally:
            try:
                claim.delete(condition=LabSlot.holder == holder)
            except DeleteError as error:
                if error.cause_response_code != "ConditionalCheckFailedException":
                    raise  # otherwise the lease ran out and another run holds the slot now: leave it be
        return
    raise DomainError("busy", "The lab is busy with other runs right now; try again in a few seconds.",
                      retry_after=BUSY_RETRY_AFTER_SECONDS)


def lab_run_save(*, kind: str, technique: str, params: dict[str, Any], result: dict[str, Any]) -> LabRun:
    now = utcnow()
    run = LabRun(
        LabRun.pk_for(kind), LabRun.sk_for(now, uuid.uuid4().hex[:8]),
        kind=kind, technique=technique, params=json.dumps(params), result=json.dumps(result),
        created_at=now, expires_at=now + RUN_TTL,
    )
    run.save()  # a fresh time-ordered key: nothing to collide with
    return run


def lab_runs_recent(*, kind: str, limit: int = 10) -> list[LabRun]:
    return list(LabRun.query(LabRun.pk_for(kind), scan_index_forward=False, limit=limit))
