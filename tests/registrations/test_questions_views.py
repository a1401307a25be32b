"""Custom questions through the pages and the API on DynamoDB Local: the register form, the staff's questions page,
the attendee list, the CSV, the door's answers, problem+json refusals and hostile input for every new field."""

import json
import re
import uuid

import pytest

from registrations import selectors
from registrations.models import Registration
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from tests.helpers import assert_invariants_clean, assert_problem
from tests.registrations.helpers import make_event

DIET = Question(id="d1e7d1e7", label="Diet", kind="single", required=True, choices=("none", "vegan"), door=True)
NOTE = Question(id="0a0b0c0d", label="Anything else?", kind="text")
WHEN = Question(id="1a2b3c4d", label="Arrival date", kind="date")
COUNT = Question(id="2b3c4d5e", label="Guests", kind="number")
TOPICS = Question(id="3c4d5e6f", label="Topics", kind="multiple", choices=("AI", "Robots", "Space"))
PHOTO = Question(id="4d5e6f70", label="Photos OK", kind="yesno")
ALL = (DIET, NOTE, WHEN, COUNT, TOPICS, PHOTO)


@pytest.fixture(autouse=True)
def cold_questions():
    question_sets.known.reset()
    yield
    question_sets.known.reset()


@pytest.fixture
def event(ddb):
    created = make_event()
    question_services.questions_update(event_id=created.event_id, expected_version=0, questions=ALL, updated_by="staff")
    return created


def token_of(page: str) -> str:
    return re.search(r'name="questions" value="([^"]+)"', page).group(1)


def register_page(client, event_id: str, **answers):
    page = client.get(f"/events/{event_id}/").content.decode()
    data = {"idempotency_key": str(uuid.uuid4()), "questions": token_of(page)}
    data.update({f"answer_{qid}": value for qid, value in answers.items()})
    return client.post(f"/events/{event_id}/register/", data)


def api_register(client, event_id: str, body=None, key=None):
    data = "" if body is None else (body if isinstance(body, str) else json.dumps(body))
    return client.post(f"/api/events/{event_id}/registrations", data=data, content_type="application/json",
                       HTTP_IDEMPOTENCY_KEY=key or str(uuid.uuid4()))


def claim(event_id: str, student) -> object:
    from tems.identity import user_key
    return selectors.claim_get(event_id=event_id, user_id=user_key(student))


# --- the register form ------------------------------------------------------------------------------------------

def test_the_event_page_asks_the_questions(event, student_client):
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    for question in ALL:
        assert question.label in page
    assert 'name="answer_d1e7d1e7" value="vegan"' in page and 'type="date"' in page


def test_a_required_question_left_out_is_named_on_the_page_and_nothing_is_written(event, student_client, student):
    response = register_page(student_client, event.event_id, **{NOTE.id: "hello"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "“Diet” is required." in page and 'value="hello"' in page  # what was typed is kept
    assert claim(event.event_id, student) is None


def test_a_post_with_answers_writes_before_reading_anything(event, student_client, student, dynamodb_calls):
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    data = {"idempotency_key": str(uuid.uuid4()), "questions": token_of(page), f"answer_{DIET.id}": "vegan",
            f"answer_{TOPICS.id}": ["Space", "AI"], f"answer_{PHOTO.id}": "no", f"answer_{COUNT.id}": "2.50",
            f"answer_{WHEN.id}": "2027-04-30"}
    dynamodb_calls.clear()
    response = student_client.post(f"/events/{event.event_id}/register/", data)
    assert response.status_code == 302
    # One request decides and writes everything (the page's reads for the next page come after it).
    assert dynamodb_calls[0] == "TransactWriteItems" and dynamodb_calls.count("TransactWriteItems") == 1
    registration = claim(event.event_id, student)
    copy = Registration.get(*Registration.event_key_for(event.event_id, registration.registration_id))
    assert {a["label"]: a["value"] for a in question_sets.answers_of(copy.answers)} == {
        "Diet": "vegan", "Topics": ["AI", "Space"], "Photos OK": "no", "Guests": "2.50", "Arrival date": "2027-04-30"}
    assert_invariants_clean()


def test_questions_changed_after_the_page_was_shown_are_a_readable_message(event, student_client, student):
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    question_services.questions_update(event_id=event.event_id, expected_version=1, updated_by="staff",
                              questions=[DIET, Question(id="9a9b9c9d", label="Shoe size", kind="number",
                                                        required=True)])
    response = student_client.post(f"/events/{event.event_id}/register/", {
        "idempotency_key": str(uuid.uuid4()), "questions": token_of(page), f"answer_{DIET.id}": "none"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "The questions for this event changed" in text and "Shoe size" in text
    assert claim(event.event_id, student) is None


def test_a_forged_questions_token_counts_as_none_and_is_refused(event, student_client, student):
    response = student_client.post(f"/events/{event.event_id}/register/", {
        "idempotency_key": str(uuid.uuid4()), "questions": "forged:token", f"answer_{DIET.id}": "none"})
    assert response.status_code == 400 and "changed" in response.content.decode()
    assert claim(event.event_id, student) is None


# --- the API ----------------------------------------------------------------------------------------------------

def test_api_missing_required_answer_is_a_400_naming_the_question(event, student_client, student):
    body = assert_problem(api_register(student_client, event.event_id, {"answers": {NOTE.id: "hi"}}), 400)
    assert body["errors"] == {f"answers.{DIET.id}": ["“Diet” is required."]} and "Diet" in body["detail"]
    assert claim(event.event_id, student) is None


def test_api_first_registration_with_answers_is_one_request_and_replays_byte_for_byte(event, student_client,
                                                                                       dynamodb_calls):
    question_sets.known.reset()  # a cold process: the client's read of the questions is what teaches it
    listed = student_client.get(f"/api/events/{event.event_id}/questions").json()
    assert listed["version"] == 1 and [q["label"] for q in listed["questions"]] == [q.label for q in ALL]
    key, body = str(uuid.uuid4()), {"answers": {DIET.id: "vegan", TOPICS.id: ["Robots"], PHOTO.id: True}}
    dynamodb_calls.clear()
    first = api_register(student_client, event.event_id, body, key)
    assert first.status_code == 201, first.content
    assert dynamodb_calls == ["TransactWriteItems"]
    again = api_register(student_client, event.event_id, body, key)
    assert again.status_code == 201 and again.content == first.content and again["Idempotent-Replayed"] == "true"
    # The answers are part of the tap's fingerprint: the same key with other answers is refused.
    assert_problem(api_register(student_client, event.event_id, {"answers": {DIET.id: "none"}}, key), 422)


def test_api_with_a_stale_copy_of_the_questions_reads_them_and_checks_again(event, student_client):
    question_sets.known.remember(event.event_id, question_sets.NO_QUESTIONS)
    body = assert_problem(api_register(student_client, event.event_id), 400)  # Diet is required, as read now
    assert f"answers.{DIET.id}" in body["errors"]
    assert api_register(student_client, event.event_id, {"answers": {DIET.id: "none"}}).status_code == 201


def test_an_event_without_questions_registers_with_an_empty_body(ddb, student_client):
    plain = make_event()
    assert api_register(student_client, plain.event_id).status_code == 201


@pytest.mark.parametrize(("answers", "field"), [
    ({DIET.id: "meat"}, DIET.id), ({DIET.id: ["none"]}, DIET.id), ({DIET.id: 1}, DIET.id),
    ({DIET.id: "none", NOTE.id: "x" * 501}, NOTE.id), ({DIET.id: "none", NOTE.id: {"a": 1}}, NOTE.id),
    ({DIET.id: "none", WHEN.id: "2027-02-30"}, WHEN.id), ({DIET.id: "none", WHEN.id: "0001-01-01T00:00"}, WHEN.id),
    ({DIET.id: "none", COUNT.id: "NaN"}, COUNT.id), ({DIET.id: "none", COUNT.id: "1e999999"}, COUNT.id),
    ({DIET.id: "none", COUNT.id: True}, COUNT.id), ({DIET.id: "none", COUNT.id: "9" * 40}, COUNT.id),
    ({DIET.id: "none", TOPICS.id: ["AI", "AI"]}, TOPICS.id), ({DIET.id: "none", TOPICS.id: ["Cooking"]}, TOPICS.id),
    ({DIET.id: "none", PHOTO.id: "maybe"}, PHOTO.id),
    ({DIET.id: "none", "zzzzzzzz": "x"}, "zzzzzzzz"), ({DIET.id: "none", "#" * 5000: "x"}, "#" * 40),
])
def test_hostile_answers_are_400_naming_the_question_and_write_nothing(event, student_client, student, answers,
                                                                         field):
    body = assert_problem(api_register(student_client, event.event_id, {"answers": answers}), 400)
    assert f"answers.{field}" in body["errors"]
    assert claim(event.event_id, student) is None


@pytest.mark.parametrize("body", [
    {"answers": ["none"]}, {"answers": "none"}, {"answers": {DIET.id: "none"}, "extra": 1},
    {"answers": {f"{n:08x}": "x" for n in range(21)}}, "[1, 2]", '{"answers": {"\\ud800": "x"}}',
    {"answers": {DIET.id: "none", NOTE.id: "nul\x00"}}, {"answers": {DIET.id: "none", NOTE.id: "\ud800"}},
])
def test_hostile_registration_bodies_are_400(event, student_client, student, body):
    assert_problem(api_register(student_client, event.event_id, body), 400)
    assert claim(event.event_id, student) is None


# --- staff: the questions page and API ----------------------------------------------------------------------------

def test_staff_add_a_question_on_the_page(ddb, staff_client):
    plain = make_event()
    page = staff_client.get(f"/events/{plain.event_id}/questions/").content.decode()
    new_id = re.search(r'name="new_id" value="([0-9a-f]{8})"', page).group(1)
    base = re.search(r'name="base" value="([^"]+)"', page).group(1)
    response = staff_client.post(f"/events/{plain.event_id}/questions/", {
        "version": "0", "base": base, "new_id": new_id, "label-new": "Diet", "kind-new": "single",
        "choices-new": "none\nvegan\n", "required-new": "on", "door-new": "on"})
    assert response.status_code == 302
    stored = question_sets.questions_get(event_id=plain.event_id)
    assert stored.version == 1 and stored.questions == (Question(id=new_id, label="Diet", kind="single",
                                                                  required=True, choices=("none", "vegan"),
                                                                  door=True),)


def test_two_staff_pages_saved_from_one_version_merge(event, staff_client):
    page = staff_client.get(f"/events/{event.event_id}/questions/").content.decode()
    base = re.search(r'name="base" value="([^"]+)"', page).group(1)

    def form(**changes):
        data = {"version": "1", "base": base, "question": [q.id for q in ALL], "label-new": ""}
        for q in ALL:
            data.update({f"label-{q.id}": q.label, f"kind-{q.id}": q.kind, f"choices-{q.id}": "\n".join(q.choices)})
            if q.required:
                data[f"required-{q.id}"] = "on"
            if q.door:
                data[f"door-{q.id}"] = "on"
        return {**data, **changes}

    assert staff_client.post(f"/events/{event.event_id}/questions/", form(**{f"label-{NOTE.id}": "Notes"})
                             ).status_code == 302
    assert staff_client.post(f"/events/{event.event_id}/questions/", form(**{f"remove-{PHOTO.id}": "on"})
                             ).status_code == 302
    stored = question_sets.questions_get(event_id=event.event_id)
    assert stored.version == 3
    assert [q.label for q in stored.questions] == ["Diet", "Notes", "Arrival date", "Guests", "Topics"]
    clash = staff_client.post(f"/events/{event.event_id}/questions/", form(**{f"label-{NOTE.id}": "Remarks"}))
    assert clash.status_code == 409 and "You both changed" in clash.content.decode()
    assert question_sets.questions_get(event_id=event.event_id).version == 3  # nothing written


def test_a_question_without_choices_is_refused_on_the_page(ddb, staff_client):
    plain = make_event()
    response = staff_client.post(f"/events/{plain.event_id}/questions/", {
        "version": "0", "base": "", "new_id": "abcdef01", "label-new": "Pick", "kind-new": "single"})
    assert response.status_code == 400 and "at least two choices" in response.content.decode()
    assert question_sets.questions_get(event_id=plain.event_id).version == 0


def test_students_cannot_edit_questions(event, student_client):
    assert student_client.get(f"/events/{event.event_id}/questions/").status_code in (302, 403)
    assert_problem(student_client.put(f"/api/events/{event.event_id}/questions", content_type="application/json",
                                      data=json.dumps({"version": 1, "questions": []})), 403)
    assert question_sets.questions_get(event_id=event.event_id).version == 1


def test_api_put_of_a_stale_version_is_409_with_the_stored_questions(event, staff_client):
    url = f"/api/events/{event.event_id}/questions"
    ok = staff_client.put(url, data=json.dumps({"version": 1, "questions": [{"label": "Size", "kind": "text"}]}),
                          content_type="application/json")
    assert ok.status_code == 200 and ok.json()["version"] == 2
    body = assert_problem(staff_client.put(url, data=json.dumps({"version": 1, "questions": []}),
                                           content_type="application/json"), 409)
    assert body["current"]["version"] == 2 and body["current"]["questions"][0]["label"] == "Size"


@pytest.mark.parametrize("body", [
    {"version": "1", "questions": []}, {"version": True, "questions": []}, {"version": -1, "questions": []},
    {"version": 1, "questions": {}}, {"version": 1, "questions": ["x"]},
    {"version": 1, "questions": [{"label": "x", "kind": "essay"}]},
    {"version": 1, "questions": [{"label": "", "kind": "text"}]},
    {"version": 1, "questions": [{"label": "x" * 201, "kind": "text"}]},
    {"version": 1, "questions": [{"label": "x", "kind": "single", "choices": ["a"]}]},
    {"version": 1, "questions": [{"label": "x", "kind": "single", "choices": ["a", "a"]}]},
    {"version": 1, "questions": [{"label": "x", "kind": "single", "choices": ["a", "b" * 101]}]},
    {"version": 1, "questions": [{"label": "x", "kind": "single", "choices": [1, 2]}]},
    {"version": 1, "questions": [{"id": "../../x", "label": "x", "kind": "text"}]},
    {"version": 1, "questions": [{"id": "abcdef01\n", "label": "x", "kind": "text"}]},
    {"version": 1, "questions": [{"label": "x", "kind": "text"}] * 21},
])
def test_hostile_question_edits_are_400_and_write_nothing(event, staff_client, body):
    response = staff_client.put(f"/api/events/{event.event_id}/questions", data=json.dumps(body),
                                content_type="application/json")
    assert_problem(response, 400)
    assert question_sets.questions_get(event_id=event.event_id).version == 1


# --- where answers are shown --------------------------------------------------------------------------------------

def test_answers_appear_on_the_attendee_list_in_the_csv_and_at_the_door(event, student_client, staff_client,
                                                                       student):
    api_register(student_client, event.event_id, {"answers": {DIET.id: "vegan", NOTE.id: "=cmd()",
                                                              TOPICS.id: ["AI", "Space"]}})
    registration_id = claim(event.event_id, student).registration_id
    listing = staff_client.get(f"/events/{event.event_id}/attendees/").content.decode()
    assert "vegan" in listing and "AI, Space" in listing
    # A question removed later still shows its answers, in the CSV's "other answers".
    question_services.questions_update(event_id=event.event_id, expected_version=1, updated_by="staff",
                              questions=[q for q in ALL if q.id != NOTE.id])
    csv = b"".join(staff_client.get(f"/events/{event.event_id}/attendees.csv").streaming_content).decode()
    header, row = csv.splitlines()[:2]
    assert header.endswith("Diet,Arrival date,Guests,Topics,Photos OK,other answers")
    assert row.endswith(",vegan,,,\"AI, Space\",,Anything else?: =cmd()")  # not a formula: not at a cell's start
    door = staff_client.get(f"/api/events/{event.event_id}/door-answers/{registration_id}").json()
    assert door == {"answers": [{"label": "Diet", "value": "vegan"}]}
    assert "door-feedback-answers" in staff_client.get(f"/events/{event.event_id}/door/").content.decode()


@pytest.mark.parametrize(("field", "value", "says"), [
    (DIET.id, "meat", "Pick one of the choices."), (NOTE.id, "x" * 501, "at most 500"),
    (WHEN.id, "yesterday", "YYYY-MM-DD"), (COUNT.id, "1e999999", "Give a number below"),
    (TOPICS.id, ["AI", "Cooking"], "Pick among the choices"), (PHOTO.id, "perhaps", "Answer yes or no."),
])
def test_hostile_form_answers_are_a_readable_message_and_write_nothing(event, student_client, student, field, value,
                                                                       says):
    answers = {DIET.id: "none", field: value}
    response = register_page(student_client, event.event_id, **answers)
    assert response.status_code == 400 and says in response.content.decode()
    assert claim(event.event_id, student) is None


def test_api_retry_after_the_questions_changed_replays_the_first_answer(event, student_client):
    key, body = str(uuid.uuid4()), {"answers": {DIET.id: "none"}}
    first = api_register(student_client, event.event_id, body, key)
    question_services.questions_update(event_id=event.event_id, expected_version=1, updated_by="staff",
                              questions=[DIET, Question(id="9a9b9c9d", label="Shoe size", kind="number",
                                                        required=True)])
    question_sets.known.reset()
    again = api_register(student_client, event.event_id, body, key)  # checked now, Shoe size would be missing
    assert again.status_code == 201 and again.content == first.content and again["Idempotent-Replayed"] == "true"


@pytest.mark.parametrize(("changes", "says"), [
    ({"label-new": "nul\x00here", "kind-new": "text"}, "Null characters"),
    ({"label-new": "Pick", "kind-new": "essay"}, "The kind must be one of"),
    ({"label-new": "x" * 201, "kind-new": "text"}, "at most 200 characters"),
    ({"label-new": "Pick", "kind-new": "multiple", "choices-new": "a\n" + "b" * 101}, "at most 100 characters"),
    ({"label-new": "Pick", "kind-new": "single", "choices-new": "\n".join(str(n) for n in range(21))},
     "At most 20 choices"),
])
def test_hostile_question_rows_on_the_page_are_a_readable_message_and_write_nothing(event, staff_client, changes,
                                                                                    says):
    data = {"version": "1", "base": "", "new_id": "abcdef01", "question": [DIET.id, "../../etc", "#x"],
            f"label-{DIET.id}": DIET.label, f"kind-{DIET.id}": DIET.kind, f"choices-{DIET.id}": "none\nvegan",
            **changes}
    response = staff_client.post(f"/events/{event.event_id}/questions/", data)
    assert response.status_code == 400 and says in response.content.decode()
    assert question_sets.questions_get(event_id=event.event_id).version == 1
