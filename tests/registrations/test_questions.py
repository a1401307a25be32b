"""Custom questions on DynamoDB Local: answers written in the registration's own transaction, the seat's condition
refusing answers checked against questions that changed, and versioned question edits merged three ways."""

import json

import pytest

from registrations import selectors, services
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.models import Registration, RegistrationClaim, WaitlistEntry
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.models import EventQuestions
from registrations.questions.question_sets import NO_QUESTIONS, Question, QuestionSet
from registrations.seating.models import SeatShard
from tems.metering import metered
from tests.helpers import assert_invariants_clean, broken_invariants
from tests.race import race
from tests.registrations.helpers import make_event, new_key, register
from tests.support.faults import CONFLICT, LOST, THROTTLE, Fault, inject

DIET = Question(id="d1e7d1e7", label="Diet", kind="single", required=True, choices=("none", "vegetarian", "vegan"),
                door=True)
SIZE = Question(id="5125125a", label="T-shirt size", kind="text")


@pytest.fixture(autouse=True)
def cold_questions():
    question_sets.known.reset()
    yield
    question_sets.known.reset()


def asked(event_id: str, *items: Question, version: int = 0) -> QuestionSet:
    return question_services.questions_update(event_id=event_id, expected_version=version, questions=items,
                                              updated_by="staff")


def answers_for(qs: QuestionSet, **given) -> str | None:
    return question_sets.parse_answers(questions=qs, given=given)


def event_side(event_id: str, registration_id: str) -> Registration:
    return Registration.get(*Registration.event_key_for(event_id, registration_id), consistent_read=True)


def test_a_first_registration_with_answers_is_one_request_and_both_copies_carry_them(ddb):
    event = make_event()
    qs = asked(event.event_id, DIET, SIZE)
    answers = answers_for(qs, **{DIET.id: "vegan", SIZE.id: "M"})
    with metered() as meter:
        outcome = register(event.event_id, "ann", answers=answers, questions_version=qs.version)
    assert dict(meter.requests) == {"TransactWriteItems": 1}
    assert outcome.kind == "created"
    registration_id = outcome.data["registration_id"]
    stored = event_side(event.event_id, registration_id)
    mine = Registration.get(*Registration.user_key_for("ann", registration_id), consistent_read=True)
    expected = [{"id": DIET.id, "label": "Diet", "value": "vegan"}, {"id": SIZE.id, "label": "T-shirt size",
                                                                      "value": "M"}]
    assert question_sets.answers_of(stored.answers) == expected == question_sets.answers_of(mine.answers)
    claim = RegistrationClaim.get(*RegistrationClaim.key_for(event.event_id, "ann"), consistent_read=True)
    assert "answers" not in claim.attribute_values  # the claim stays small: the copies carry the answers
    assert_invariants_clean()


def test_the_same_tap_replays_byte_for_byte(ddb):
    event = make_event()
    qs = asked(event.event_id, DIET)
    key, answers = new_key(), answers_for(qs, **{DIET.id: "none"})
    first = register(event.event_id, "bob", key, answers=answers, questions_version=qs.version)
    again = register(event.event_id, "bob", key, answers=answers, questions_version=qs.version)
    assert again.kind == "replayed" and again.response == first.response


def test_a_required_question_left_out_is_named_and_nothing_is_written():
    qs = QuestionSet(1, (DIET, SIZE))
    with pytest.raises(RegistrationError) as caught:
        question_sets.parse_answers(questions=qs, given={SIZE.id: "L"})
    assert caught.value.code == "invalid" and caught.value.status == 400
    assert caught.value.errors == {DIET.field: ["“Diet” is required."]}
    assert "Diet" in caught.value.detail


def test_answers_checked_against_questions_that_changed_are_refused_by_the_seat(ddb):
    event = make_event()
    old = asked(event.event_id, SIZE)
    asked(event.event_id, SIZE, DIET, version=old.version)  # a required question added after the page rendered
    with pytest.raises(RegistrationError) as caught:
        register(event.event_id, "cat", answers=answers_for(old, **{SIZE.id: "S"}), questions_version=old.version)
    assert caught.value.code == "precondition_failed" and caught.value.extra["questions_version"] == 2
    assert selectors.claim_get(event_id=event.event_id, user_id="cat") is None
    assert list(Registration.query(Registration.user_pk_for("cat"))) == []  # no record, no copy: nothing
    assert_invariants_clean()


def test_an_event_without_questions_refuses_answers_from_a_forged_version(ddb):
    event = make_event()
    with pytest.raises(RegistrationError) as caught:
        register(event.event_id, "dan", answers=json.dumps([{"id": "x", "label": "x", "value": "x"}]),
                 questions_version=3)
    assert caught.value.code == "precondition_failed" and caught.value.extra["questions_version"] == 0


def test_no_questions_still_registers_under_the_absent_version(ddb):
    event = make_event()
    assert register(event.event_id, "eve").kind == "created"
    qs = asked(event.event_id, SIZE)
    # Registering without answers against the old (empty) list is refused once questions exist.
    with pytest.raises(RegistrationError) as caught:
        register(event.event_id, "fay", questions_version=NO_QUESTIONS.version)
    assert caught.value.code == "precondition_failed"
    assert register(event.event_id, "fay", questions_version=qs.version).kind == "created"


def test_a_waiting_registrant_keeps_their_answers_through_the_promotion(ddb):
    event = make_event(capacity=1)
    qs = asked(event.event_id, DIET)
    first = register(event.event_id, "gil", answers=answers_for(qs, **{DIET.id: "none"}), questions_version=1)
    waiting = register(event.event_id, "hal", answers=answers_for(qs, **{DIET.id: "vegan"}), questions_version=1)
    assert waiting.data["status"] == "waitlisted"
    entry = next(iter(WaitlistEntry.query(WaitlistEntry.lane_pk_for(event.event_id, waiting_lane(event.event_id)),
                                          WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX),
                                          consistent_read=True)))
    assert question_sets.answers_of(entry.answers)[0]["value"] == "vegan"
    services.registration_cancel(user_id="gil", registration_id=first.data["registration_id"])
    promoted = event_side(event.event_id, waiting.data["registration_id"])
    assert promoted.status == "confirmed"
    assert question_sets.answers_of(promoted.answers)[0]["value"] == "vegan"
    assert_invariants_clean()


def waiting_lane(event_id: str) -> int:
    return next(int(shard.shard) for shard in SeatShard.query(SeatShard.pk_for(event_id, 0)) if shard.waiting)


def test_an_edit_sets_the_version_on_every_shard_in_one_transaction(ddb):
    event = make_event(capacity=120)  # three shards
    with metered() as meter:
        saved = asked(event.event_id, SIZE)
    assert meter.requests["TransactWriteItems"] == 1
    shards = [SeatShard.get(*SeatShard.key_for(event.event_id, k), consistent_read=True) for k in range(3)]
    assert [int(s.questions) for s in shards] == [saved.version] * 3 == [1, 1, 1]
    assert_invariants_clean()


def test_a_shard_an_edit_left_behind_is_reported(ddb):
    event = make_event(capacity=120)
    asked(event.event_id, SIZE)
    SeatShard(*SeatShard.key_for(event.event_id, 1)).update(actions=[SeatShard.questions.remove()])
    found = broken_invariants()
    assert list(found) == ["every seat shard carries its event's questions version"]
    assert found[next(iter(found))] == [f"EVENT#{event.event_id}: seat shard 1 carries questions version None, not 1"]


def test_a_capacity_raise_gives_new_shards_the_questions_version(ddb):
    event = make_event(capacity=50)
    asked(event.event_id, SIZE)
    event_services.event_update(event_id=event.event_id, expected_version=1, updated_by="staff", title="Open day",
                          description="", location="", starts_at=event.starts_at, capacity=150)
    shards = [SeatShard.get(*SeatShard.key_for(event.event_id, k), consistent_read=True) for k in range(3)]
    assert [int(s.questions) for s in shards] == [1, 1, 1]
    assert register(event.event_id, "ivy", questions_version=1).kind == "created"


def test_a_stale_edit_is_refused_with_what_is_stored(ddb):
    event = make_event()
    asked(event.event_id, SIZE)
    with pytest.raises(RegistrationError) as caught:
        asked(event.event_id, DIET, version=0)
    assert caught.value.code == "conflict"
    assert caught.value.extra["current"].questions == (SIZE,)


def test_two_staff_editing_at_once_lose_nothing(ddb):
    event = make_event()
    opened = asked(event.event_id, SIZE)
    base = question_services.canonical(opened.questions)
    renamed = Question(id=SIZE.id, label="Shirt size", kind="text")
    added = Question(id="ab12cd34", label="Arriving by", kind="single", choices=("car", "train"))

    def edit(mine):
        return lambda: question_services.questions_edit(event_id=event.event_id, expected_version=1, base=base,
                                                        mine=mine, updated_by="staff")

    outcomes = race([edit([renamed]), edit([SIZE, added, DIET])])
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    stored = question_sets.questions_get(event_id=event.event_id)
    assert stored.version == 3
    assert {q.id: q.label for q in stored.questions} == {SIZE.id: "Shirt size", added.id: "Arriving by",
                                                          DIET.id: "Diet"}
    item = EventQuestions.get(*EventQuestions.key_for(event.event_id), consistent_read=True)
    assert int(item.version) == 3


def test_both_changing_one_question_is_a_clash_and_nothing_is_written(ddb):
    event = make_event()
    opened = asked(event.event_id, SIZE)
    base = question_services.canonical(opened.questions)
    question_services.questions_edit(event_id=event.event_id, expected_version=1, base=base, updated_by="a",
                            mine=[Question(id=SIZE.id, label="Shirt", kind="text")])
    with pytest.raises(RegistrationError) as caught:
        question_services.questions_edit(event_id=event.event_id, expected_version=1, base=base, updated_by="b",
                                mine=[Question(id=SIZE.id, label="Size", kind="text")])
    assert caught.value.code == "conflict" and caught.value.extra["merge"].clashing == {SIZE.id}
    assert question_sets.questions_get(event_id=event.event_id).questions[0].label == "Shirt"


def test_removing_a_question_keeps_the_answers_given_to_it(ddb):
    event = make_event()
    qs = asked(event.event_id, SIZE)
    outcome = register(event.event_id, "jo", answers=answers_for(qs, **{SIZE.id: "XL"}), questions_version=1)
    asked(event.event_id, version=1)  # every question removed
    stored = event_side(event.event_id, outcome.data["registration_id"])
    assert question_sets.answers_of(stored.answers) == [{"id": SIZE.id, "label": "T-shirt size", "value": "XL"}]


def test_a_blind_overwrite_loses_an_edit_so_the_race_above_can_fail(ddb, monkeypatch):
    """The broken variant of the race above: each save written over whatever is stored (read, then write at that
    version) instead of merged onto it. One editor's change is lost, which the version check and merge prevent."""
    event = make_event()
    opened = asked(event.event_id, SIZE)
    base = question_services.canonical(opened.questions)
    original = question_services.questions_update

    def blind(*, event_id, expected_version, questions, updated_by, now=None, actor=None):
        while True:
            stored = questions_get_version(event_id)
            try:
                return original(event_id=event_id, expected_version=stored, questions=questions,
                                updated_by=updated_by)
            except RegistrationError as error:
                if error.code != "conflict":
                    raise

    monkeypatch.setattr(question_services, "questions_update", blind)
    renamed = Question(id=SIZE.id, label="Shirt size", kind="text")
    added = Question(id="ab12cd34", label="Arriving by", kind="single", choices=("car", "train"))
    race([lambda: question_services.questions_edit(event_id=event.event_id, expected_version=1, base=base,
                                                   mine=[renamed], updated_by="a"),
          lambda: question_services.questions_edit(event_id=event.event_id, expected_version=1, base=base,
                                                   mine=[SIZE, added], updated_by="b")])
    labels = {q.id: q.label for q in question_sets.questions_get(event_id=event.event_id).questions}
    assert labels != {SIZE.id: "Shirt size", added.id: "Arriving by"}


def questions_get_version(event_id: str) -> int:
    return question_sets.questions_get(event_id=event_id).version


# --- faults on the new writes: the registration with answers, the questions' edit --------------------------------

def test_a_registration_with_answers_whose_answer_is_lost_is_created_once_with_them(ddb):
    event = make_event()
    qs = asked(event.event_id, DIET)
    with inject(Fault(LOST, operations={"TransactWriteItems"}, times=1)) as faults:
        outcome = register(event.event_id, "kim", answers=answers_for(qs, **{DIET.id: "vegan"}), questions_version=1)
    assert faults.fired(LOST) and outcome.kind == "created"
    stored = event_side(event.event_id, outcome.data["registration_id"])
    assert question_sets.answers_of(stored.answers)[0]["value"] == "vegan"
    assert_invariants_clean()


@pytest.mark.parametrize("kind", [LOST, THROTTLE, CONFLICT])
def test_a_questions_edit_meeting_a_fault_is_saved_once(ddb, kind):
    event = make_event(capacity=120)
    with inject(Fault(kind, operations={"TransactWriteItems"}, times=1)) as faults:
        saved = asked(event.event_id, SIZE)
    assert faults.fired(kind) and saved.version == 1
    assert question_sets.questions_get(event_id=event.event_id) == QuestionSet(1, (SIZE,))
    # A lost answer is repeated with the same token: the version moved once, never twice.
    assert int(EventQuestions.get(*EventQuestions.key_for(event.event_id), consistent_read=True).version) == 1
    assert {int(SeatShard.get(*SeatShard.key_for(event.event_id, k)).questions) for k in range(3)} == {1}


def test_without_the_seat_clause_a_stale_answer_would_be_stored(ddb, monkeypatch):
    """The broken variant of the refusal above: the seat condition without its questions clause stores answers
    checked against a list that changed, a required answer missing; the clause is what keeps them out."""
    event = make_event()
    old = asked(event.event_id, SIZE)
    asked(event.event_id, SIZE, DIET, version=old.version)
    monkeypatch.setattr(question_sets, "shard_condition", lambda version: SeatShard.pk.exists())
    outcome = register(event.event_id, "lee", answers=answers_for(old, **{SIZE.id: "S"}), questions_version=1)
    assert outcome.kind == "created"  # stored without the required "Diet": what the real condition refuses
