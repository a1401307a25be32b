"""Edits of an event's custom questions: one version-checked transaction, merged three ways when someone saved
in between (tems.merge), as event edits are.

A save writes the ``EventQuestions`` item under ``version = expected`` and sets every seat shard's ``questions``
to the new version in the same transaction, conditioned on the gate still counting the shards that were read
(a re-slicing that adds shards moves that count, and copies the version onto the shards it adds). From the
commit on, a registration whose answers were checked against the old list is refused by its seat's condition
(registrations.questions.shard_condition). Answers already given live on the registrations and are never
rewritten, so no edit of the questions loses one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registrations.errors import RegistrationError
from registrations.questions.models import EventQuestions
from registrations.questions.question_sets import (
    Question,
    QuestionSet,
    checked_questions,
    known,
    questions_from_json,
    questions_to_json,
)
from registrations.seating import holds, marks
from registrations.seating.models import SeatGate, SeatShard
from registrations.write_rules import WRITE_POLICY, busy_error
from tems import audit
from tems.audit.wording import QUESTIONS_CHANGED
from tems.clock import utcnow
from tems.merge import MERGE_ATTEMPTS, Merge, three_way_merge
from tems.transactions import LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

QUESTIONS = "questions"
GATE = "gate"
# A round is lost to a re-slicing that added shards between the gate's read and the write: rare (a capacity
# edit), and each lost round is someone else's progress.
EDIT_ROUNDS = 5


def _current(raw: dict[str, Any] | None) -> tuple[QuestionSet, str]:
    if not raw:
        return QuestionSet(0), ""
    item = EventQuestions.from_raw_data(raw)
    return QuestionSet(int(item.version), questions_from_json(item.questions)), item.updated_by


def questions_update(*, event_id: str, expected_version: int, questions: Iterable[Question], updated_by: str,
                     now: datetime | None = None, actor: audit.Actor | None = None) -> QuestionSet:
    """Replace the event's questions with ``questions`` if they are still at ``expected_version`` (0: none yet).

    One TransactWriteItems: the questions item, a check of the gate's shard count and every seat shard. Returns
    the saved list at its new version. Raises RegistrationError: 'invalid' (a question is not valid, named by
    ``errors``), 'not_found' (no such event), 'conflict' (saved by someone else since: ``extra`` ``current``, the
    stored QuestionSet, and ``expected_version``; nothing written), 'busy'. ``actor`` (``tems.audit.actor_of``):
    the audit entry, in the same transaction.
    """
    checked = checked_questions(list(questions))
    now = now or utcnow()
    for _ in range(EDIT_ROUNDS):
        try:
            gate = SeatGate.get(*SeatGate.key_for(event_id), consistent_read=True)
        except SeatGate.DoesNotExist:  # the gate is born with the event
            raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
        count = int(gate.shards)

        def attempt(count: int = count) -> None:
            transaction = LabelledTransaction()
            # PynamoDB adds "version = :expected" (absent for 0) and the bump: the check and the change are one.
            item = EventQuestions(*EventQuestions.key_for(event_id), event_id=event_id,
                                  questions=questions_to_json(checked), updated_at=now, updated_by=updated_by)
            if expected_version:
                item.version = expected_version
            transaction.save(QUESTIONS, item, return_old_on_failure=True)
            transaction.condition_check(GATE, SeatGate, *SeatGate.key_for(event_id),
                                        condition=SeatGate.shards == count)
            # The lanes here; the shards past them are held meanwhile and take the stored version after it.
            marks.add_to_lanes(transaction, event_id=event_id, count=count,
                               actions=lambda: [SeatShard.questions.set(expected_version + 1)])
            if actor is not None:
                audit.add_entry(transaction, actor=actor, action=QUESTIONS_CHANGED,
                                team=actor.team_of("event_id", event_id), event_id=event_id,
                                after={"questions": len(checked), "version": expected_version + 1}, now=now)
            transaction.commit()

        token = holds.hold(event_id=event_id, count=count, now=now) if holds.needed(count=count) else None
        try:
            WRITE_POLICY.run(attempt, busy=lambda _: busy_error(
                "These questions are being changed right now; nothing was saved. Try again."))
        except TransactionCancelled as cancelled:
            if cancelled.failed(QUESTIONS):
                current, by = _current(cancelled.reasons[QUESTIONS].raw_item)
                # No version numbers in the words: staff see them on a page (the API's answer carries them).
                raise RegistrationError(
                    "conflict", f"{by or 'Someone'} changed these questions after you opened them. Nothing of "
                    "yours was saved.",
                    current=current, expected_version=expected_version) from None
            continue  # the shards were re-sliced since the gate was read: read it again
        finally:
            if token is not None:
                _release(event_id=event_id, token=token)
        saved = QuestionSet(expected_version + 1, checked)
        known.remember(event_id, saved)
        return saved
    raise busy_error("This event's seats kept changing while the questions were saved; nothing was saved. Try again.")


def _release(*, event_id: str, token: str) -> None:
    try:
        holds.release(event_id=event_id, token=token)
    except Exception:  # noqa: BLE001 - the save stands or not; the hold's outbox message releases the shards
        logger.warning("releasing the held shards of event %s left to the outbox", event_id, exc_info=True)


# --- merging (a save that met someone else's) ------------------------------------------------------------------

def canonical(questions: Iterable[Question]) -> dict[str, str]:
    """Questions as merge fields: id -> the question as canonical JSON (its place in the list is kept apart)."""
    return {q.id: json.dumps(q.to_dict(), sort_keys=True, ensure_ascii=False) for q in questions}


class _Absent(dict):
    """A canonical list in which a question it lacks reads as None (removed, or never there)."""

    def __missing__(self, key: str) -> None:
        return None


@dataclass(frozen=True)
class QuestionsEditOutcome:
    saved: QuestionSet
    merge: Merge | None = None  # set when someone had saved in between and their changes were kept


def merged_list(merge: Merge, *, theirs: list[str], mine: list[str]) -> list[Question]:
    """The merged questions in their stored order, then the ones only this editor added, in theirs."""
    order = [*theirs, *(qid for qid in mine if qid not in theirs)]
    return [Question.from_dict(json.loads(merge.values[qid])) for qid in order if merge.values.get(qid)]


def questions_edit(*, event_id: str, expected_version: int, base: dict[str, str] | None, mine: list[Question],
                   updated_by: str, actor: audit.Actor | None = None) -> QuestionsEditOutcome:
    """Save ``mine`` (edited from ``base``, canonical, at ``expected_version``), merged with every save since.

    A question only I changed (or added, or removed) takes my version; one only others changed keeps theirs; one
    both changed differently is a clash, and nothing is written. Raises RegistrationError 'conflict' with
    ``extra`` ``current``, ``merge`` and ``base`` on a clash; otherwise as ``questions_update``.
    """
    assumed = _Absent(base) if base is not None else None
    # A question of the base missing from mine is one I removed (None); without a base none can be told apart.
    mine_values = {**dict.fromkeys(assumed or {}), **canonical(mine)}
    version, to_save, merged = expected_version, list(mine), None
    for _ in range(MERGE_ATTEMPTS):
        try:
            saved = questions_update(event_id=event_id, expected_version=version, questions=to_save,
                                     updated_by=updated_by, actor=actor)
        except RegistrationError as error:
            if error.code != "conflict" or "current" not in error.extra:
                raise
            current: QuestionSet = error.extra["current"]
            theirs = _Absent(canonical(current.questions))
            fields = list(dict.fromkeys([*theirs, *mine_values, *(assumed or {})]))
            # An unknown base (a forged or missing token) makes every question that differs a clash.
            merged = three_way_merge(base=assumed if assumed is not None else {f: object() for f in fields},
                                     theirs=theirs, mine=mine_values, fields=fields)
            if not merged.clean:
                error.extra.update(merge=merged, base=base)
                raise
            version = current.version
            to_save = merged_list(merged, theirs=list(theirs), mine=[q.id for q in mine])
            continue
        return QuestionsEditOutcome(saved, merged)
    raise busy_error("These questions kept changing while your edit was merged; nothing was saved. Try again.")
