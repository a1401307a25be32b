"""What answers cost a registration's items: at the caps (registrations.questions) the largest item stays far
under DynamoDB's 400 KB per item, and a few short answers keep a registration's copies at one write unit each."""

from registrations.models import Registration
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import (
    MAX_LABEL_CHARS,
    MAX_QUESTIONS,
    MAX_TEXT_ANSWER_CHARS,
    Question,
    QuestionSet,
)
from tems.dynamo import boto3_client, current_config
from tests.registrations.helpers import make_event, new_key, register
from tests.support.item_size import KB, item_size

USER_ID = "0b6f3e1c-41d5-4a2e-9c7e-5d1f2a3b4c5d"
ITEM_LIMIT = 400 * KB


def stored_copies(event_id: str, registration_id: str) -> list[dict]:
    client, table = boto3_client(), current_config().table_name
    return [client.get_item(TableName=table, Key={"PK": {"S": pk}, "SK": {"S": sk}})["Item"]
            for pk, sk in (Registration.event_key_for(event_id, registration_id),
                           Registration.user_key_for(USER_ID, registration_id))]


def registered_with(event_id: str, asked: tuple[Question, ...], given: dict) -> list[dict]:
    saved = question_services.questions_update(event_id=event_id, expected_version=0, questions=asked, updated_by="s")
    answers = question_sets.parse_answers(questions=QuestionSet(saved.version, asked), given=given)
    outcome = register(event_id, USER_ID, new_key(), answers=answers, questions_version=saved.version)
    return stored_copies(event_id, outcome.data["registration_id"])


def test_answers_at_every_cap_stay_far_under_the_item_limit(moto_ddb):
    event = make_event()
    asked = tuple(Question(id=f"{n:08x}", label="é" * MAX_LABEL_CHARS, kind="text") for n in range(MAX_QUESTIONS))
    copies = registered_with(event.event_id, asked, {q.id: "😀" * MAX_TEXT_ANSWER_CHARS for q in asked})
    assert all(item_size(copy) < ITEM_LIMIT / 4 for copy in copies), [item_size(c) for c in copies]


def test_a_few_short_answers_keep_each_copy_under_1_kb(moto_ddb):
    event = make_event()
    asked = (Question(id="d1e7d1e7", label="Diet", kind="single", choices=("none", "vegetarian", "vegan")),
             Question(id="5125125a", label="T-shirt size", kind="text"),
             Question(id="0a0b0c0d", label="Photos OK", kind="yesno"))
    copies = registered_with(event.event_id, asked, {"d1e7d1e7": "vegetarian", "5125125a": "XL", "0a0b0c0d": "yes"})
    assert all(item_size(copy) < KB for copy in copies), [item_size(c) for c in copies]
