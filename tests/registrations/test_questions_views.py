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
from registrations.seating.models import SeatShard
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

def row(question: Question, **changes) -> dict:
    """A question's row of the editor as a browser posts it (an unticked box is not sent)."""
    fields = {"id": question.id, "label": question.label, "kind": question.kind,
              "choices": "\n".join(question.choices), **changes}
    for box in ("required", "door"):
        if getattr(question, box) and box not in changes:
            fields[box] = "on"
    return fields


def editor_post(rows: list[dict], **extra) -> dict:
    """The editor's formset as posted: its management form and each row under its index."""
    data = {"questions-TOTAL_FORMS": str(len(rows)), "questions-INITIAL_FORMS": str(len(rows)),
            "questions-MIN_NUM_FORMS": "0", "questions-MAX_NUM_FORMS": "22"}
    for n, fields in enumerate(rows):
        data.update({f"questions-{n}-{name}": value for name, value in fields.items()})
    return {**data, **extra}


def opened(client, event_id: str) -> tuple[str, str, list[str]]:
    """The questions page as opened: its version, its signed base and the ids of its rows."""
    page = client.get(f"/events/{event_id}/questions/").content.decode()
    version = re.search(r'name="version" value="(\d+)"', page).group(1)
    base = re.search(r'name="base" value="([^"]+)"', page).group(1)
    return version, base, re.findall(r'name="questions-\d+-id" value="([0-9a-f]{8})"', page)


def test_staff_add_several_questions_in_one_save(ddb, staff_client):
    plain = make_event()
    version, base, (first, second) = opened(staff_client, plain.event_id)  # two empty rows to fill
    diet = Question(id=first, label="Diet", kind="single", required=True, choices=("none", "vegan"), door=True)
    size = Question(id=second, label="T-shirt size", kind="text")
    response = staff_client.post(f"/events/{plain.event_id}/questions/", editor_post(
        [row(diet, choices="none\nvegan\n"), row(size)], version=version, base=base))
    assert response.status_code == 302
    stored = question_sets.questions_get(event_id=plain.event_id)
    assert stored.version == 1 and stored.questions == (diet, size)
    saved = staff_client.get(f"/events/{plain.event_id}/questions/").content.decode()
    assert "Saved the questions." in saved and "version" not in saved.split("Saved the questions.")[1][:40]


def test_empty_rows_are_left_out_and_choices_only_kept_for_choice_kinds(ddb, staff_client):
    plain = make_event()
    version, base, (first, second) = opened(staff_client, plain.event_id)
    typed = Question(id=first, label="Arrival", kind="date", choices=("left", "over"))
    staff_client.post(f"/events/{plain.event_id}/questions/", editor_post(
        [row(typed), {"id": second, "label": "", "kind": "text"}], version=version, base=base))
    assert question_sets.questions_get(event_id=plain.event_id).questions == (
        Question(id=first, label="Arrival", kind="date"),)


def test_the_choices_field_is_marked_for_the_kinds_that_have_them(event, staff_client):
    page = staff_client.get(f"/events/{event.event_id}/questions/").content.decode()
    assert page.count('class="field choices-field"') == len(ALL) + 2
    assert page.count('class="question-kind"') == len(ALL) + 2


def test_up_and_down_reorder_the_rows_and_save_nothing_until_saved(event, staff_client):
    version, base, _ = opened(staff_client, event.event_id)
    rows = [row(q) for q in ALL]
    moved = staff_client.post(f"/events/{event.event_id}/questions/",
                              editor_post(rows, version=version, base=base, question_move="1:up"))
    assert moved.status_code == 200
    order = re.findall(r'name="questions-\d+-id" value="([0-9a-f]{8})"', moved.content.decode())
    assert order == [NOTE.id, DIET.id, WHEN.id, COUNT.id, TOPICS.id, PHOTO.id]
    assert question_sets.questions_get(event_id=event.event_id).version == 1  # nothing saved
    down = staff_client.post(f"/events/{event.event_id}/questions/",
                             editor_post(rows, version=version, base=base, question_move="5:down"))
    assert re.findall(r'name="questions-\d+-id" value="([0-9a-f]{8})"', down.content.decode())[-1] == PHOTO.id
    saved = staff_client.post(f"/events/{event.event_id}/questions/", editor_post(
        [row(q) for q in (NOTE, DIET, WHEN, COUNT, TOPICS, PHOTO)], version=version, base=base))
    assert saved.status_code == 302
    assert [q.id for q in question_sets.questions_get(event_id=event.event_id).questions][:2] == [NOTE.id, DIET.id]


def test_add_a_question_offers_one_more_row(event, staff_client):
    version, base, ids = opened(staff_client, event.event_id)
    rows = [row(q) for q in ALL] + [{"id": ids[-1], "label": "Typed so far", "kind": "text"}]
    more = staff_client.post(f"/events/{event.event_id}/questions/",
                             editor_post(rows, version=version, base=base, question_add="1")).content.decode()
    assert len(re.findall(r'name="questions-\d+-id"', more)) == len(rows) + 1 and "Typed so far" in more
    assert question_sets.questions_get(event_id=event.event_id).version == 1


def test_the_preview_shows_the_student_s_form_and_saves_nothing(event, staff_client):
    version, base, _ = opened(staff_client, event.event_id)
    preview = staff_client.post(f"/events/{event.event_id}/questions/",
                                editor_post([row(q) for q in ALL], version=version, base=base, question_preview="1"))
    assert preview.status_code == 200
    page = preview.content.decode()
    shown = page[page.index('id="questions-preview-heading"'):]
    assert "<fieldset disabled" in shown
    assert f'id="id_answer_{NOTE.id}"' in shown and 'value="vegan"' in shown and 'type="date"' in shown
    assert preview.context["preview"] == question_sets.form_fields(
        question_sets.QuestionSet(0, ALL), given={}, errors={})
    assert question_sets.questions_get(event_id=event.event_id).version == 1


def test_a_preview_of_an_invalid_question_names_the_problem(event, staff_client):
    version, base, _ = opened(staff_client, event.event_id)
    bad = staff_client.post(f"/events/{event.event_id}/questions/", editor_post(
        [row(DIET, choices="only one")], version=version, base=base, question_preview="1"))
    assert bad.status_code == 400 and "at least two choices" in bad.content.decode()
    assert bad.context["preview"] is None


def test_two_staff_pages_saved_from_one_version_merge(event, staff_client):
    version, base, _ = opened(staff_client, event.event_id)

    def form(**changes):
        return editor_post([row(q, **changes.get(q.id, {})) for q in ALL], version=version, base=base)

    assert staff_client.post(f"/events/{event.event_id}/questions/", form(**{NOTE.id: {"label": "Notes"}})
                             ).status_code == 302
    assert staff_client.post(f"/events/{event.event_id}/questions/", form(**{PHOTO.id: {"remove": "on"}})
                             ).status_code == 302
    stored = question_sets.questions_get(event_id=event.event_id)
    assert stored.version == 3
    assert [q.label for q in stored.questions] == ["Diet", "Notes", "Arrival date", "Guests", "Topics"]
    clash = staff_client.post(f"/events/{event.event_id}/questions/", form(**{NOTE.id: {"label": "Remarks"}}))
    text = clash.content.decode()
    assert clash.status_code == 409 and "You both changed" in text
    assert "→" not in text and "(version" not in text  # staff are told who and what, not version numbers
    assert question_sets.questions_get(event_id=event.event_id).version == 3  # nothing written


def test_a_question_without_choices_is_refused_on_the_page(ddb, staff_client):
    plain = make_event()
    response = staff_client.post(f"/events/{plain.event_id}/questions/", editor_post(
        [{"id": "abcdef01", "label": "Pick", "kind": "single"}], version="0", base=""))
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
    ({"label": "nul\x00here", "kind": "text"}, "Null characters"),
    ({"label": "Pick", "kind": "essay"}, "The kind must be one of"),
    ({"label": "x" * 201, "kind": "text"}, "at most 200 characters"),
    ({"label": "Pick", "kind": "multiple", "choices": "a\n" + "b" * 101}, "at most 100 characters"),
    ({"label": "Pick", "kind": "single", "choices": "\n".join(str(n) for n in range(21))}, "At most 20 choices"),
    ({"id": "../../etc", "label": "Pick", "kind": "text"}, "Unknown question id"),
])
def test_hostile_question_rows_on_the_page_are_a_readable_message_and_write_nothing(event, staff_client, changes,
                                                                                    says):
    data = editor_post([row(DIET), {"id": "abcdef01", **changes}], version="1", base="")
    response = staff_client.post(f"/events/{event.event_id}/questions/", data)
    assert response.status_code == 400 and says in response.content.decode()
    assert question_sets.questions_get(event_id=event.event_id).version == 1


# --- questions on the New event form ----------------------------------------------------------------------------

NEW_EVENT = {"title": "Open lab", "description": "", "location": "", "starts_at": "2030-03-01T10:00",
             "capacity": "5"}


def new_event_rows(client) -> list[str]:
    page = client.get("/events/new/").content.decode()
    return re.findall(r'name="questions-\d+-id" value="([0-9a-f]{8})"', page)


def test_the_new_event_form_writes_its_questions_in_the_create_transaction(ddb, staff_client, student_client,
                                                                          student, dynamodb_calls):
    first, second = new_event_rows(staff_client)
    diet = Question(id=first, label="Diet", kind="single", required=True, choices=("none", "vegan"))
    note = Question(id=second, label="Anything else?", kind="text")
    dynamodb_calls.clear()
    created = staff_client.post("/events/new/", editor_post(
        [row(diet), row(note)], **NEW_EVENT, idempotency_key=str(uuid.uuid4())))
    assert created.status_code == 302
    assert dynamodb_calls.count("TransactWriteItems") == 1 and not {"PutItem", "UpdateItem"} & set(dynamodb_calls)
    event_id = created["Location"].strip("/").split("/")[-1]
    stored = question_sets.questions_get(event_id=event_id)
    assert stored.version == 1 and stored.questions == (diet, note)
    seats = SeatShard.get(*SeatShard.key_for(event_id, 0))
    assert int(seats.questions) == 1  # a registration is checked against this first version
    question_sets.known.reset()
    answered = register_page(student_client, event_id, **{first: "vegan", second: "Late by 10 minutes"})
    assert answered.status_code == 302
    copy = Registration.get(*Registration.event_key_for(event_id, claim(event_id, student).registration_id))
    assert {a["label"]: a["value"] for a in question_sets.answers_of(copy.answers)} == {
        "Diet": "vegan", "Anything else?": "Late by 10 minutes"}
    assert_invariants_clean()


def test_a_new_event_with_an_invalid_question_is_not_created_and_says_why(ddb, staff_client):
    (first, _) = new_event_rows(staff_client)
    page = staff_client.post("/events/new/", editor_post(
        [{"id": first, "label": "Pick one", "kind": "single", "choices": "only"}], **NEW_EVENT,
        idempotency_key=str(uuid.uuid4())))
    assert page.status_code == 200 and "at least two choices" in page.content.decode()
    assert selectors.event_list() == ([], [])


def test_the_new_event_form_previews_and_reorders_its_questions_without_creating(ddb, staff_client):
    first, second = new_event_rows(staff_client)
    rows = [{"id": first, "label": "Diet", "kind": "yesno"}, {"id": second, "label": "Size", "kind": "text"}]
    preview = staff_client.post("/events/new/", editor_post(rows, **NEW_EVENT, question_preview="1"))
    text = preview.content.decode()
    assert preview.status_code == 200 and "What a student sees" in text and f'name="answer_{first}"' in text
    assert 'value="Open lab"' in text  # the event's fields as typed
    moved = staff_client.post("/events/new/", editor_post(rows, **NEW_EVENT, question_move="1:up"))
    assert re.findall(r'name="questions-\d+-id" value="([0-9a-f]{8})"', moved.content.decode())[:2] == [
        second, first]
    assert selectors.event_list() == ([], [])


def test_a_new_event_posted_without_the_editor_has_no_questions(ddb, staff_client):
    created = staff_client.post("/events/new/", {**NEW_EVENT, "idempotency_key": str(uuid.uuid4())})
    assert created.status_code == 302
    event_id = created["Location"].strip("/").split("/")[-1]
    assert question_sets.questions_get(event_id=event_id).version == 0


def test_the_one_transaction_check_catches_questions_written_after_the_event(ddb, staff_client, dynamodb_calls,
                                                                            monkeypatch):
    """The broken variant: the event first, its questions by a second write. The count above sees two."""
    from registrations.events import services as event_services

    create = event_services.event_create_once

    def event_then_questions(*, questions=(), **fields):
        outcome = create(**fields)
        question_services.questions_update(event_id=outcome.data["id"], expected_version=0, questions=questions,
                                           updated_by="staff")
        return outcome

    monkeypatch.setattr(event_services, "event_create_once", event_then_questions)
    (first, _) = new_event_rows(staff_client)
    dynamodb_calls.clear()
    created = staff_client.post("/events/new/", editor_post(
        [{"id": first, "label": "Diet", "kind": "text"}], **NEW_EVENT, idempotency_key=str(uuid.uuid4())))
    assert created.status_code == 302
    assert dynamodb_calls.count("TransactWriteItems") == 2  # what the create test's count of 1 refuses


@pytest.mark.parametrize("management", [
    {},  # no management form at all
    {"questions-TOTAL_FORMS": "1000000000", "questions-INITIAL_FORMS": "0"},
    {"questions-TOTAL_FORMS": "x", "questions-INITIAL_FORMS": "-1"},
])
def test_a_forged_editor_is_a_readable_refusal_and_writes_nothing(event, staff_client, management):
    response = staff_client.post(f"/events/{event.event_id}/questions/",
                                 {"version": "1", "base": "", **management, "questions-0-label": "Hi"})
    assert response.status_code == 400 and "not valid" in response.content.decode()
    assert question_sets.questions_get(event_id=event.event_id).version == 1
