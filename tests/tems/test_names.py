"""A person's first and last name: asked at sign-up, edited on the account page, taken from the provider for an
SSO account; every hostile value is a readable message (400 on the account page), never a 5xx."""

import pytest
from django.contrib.auth.models import User

from tems.accounts import NAME_MAX_CHARS, name_from_claim, sso_account_for, sso_names_update

SIGNUP = {"username": "newbie", "email": "newbie@uni.test", "password1": "a-Long-pass-2026",
          "password2": "a-Long-pass-2026"}
HOSTILE = [
    ("", "This field is required."),
    ("   ", "This field is required."),
    ("x" * (NAME_MAX_CHARS + 1), "Ensure this value has at most 150 characters"),
    ("Eve\x00", "Null characters are not allowed."),
    ("Eve\x07", "Use letters, spaces and punctuation only."),
    ("Eve\u202egnp.exe", "Use letters, spaces and punctuation only."),
    ("Line\nbreak", "Use letters, spaces and punctuation only."),
]


@pytest.mark.django_db
def test_the_account_page_edits_the_names(student_client, student):
    page = student_client.get("/accounts/")
    assert 'name="first_name"' in page.text and 'autocomplete="given-name"' in page.text
    response = student_client.post("/accounts/", {"first_name": " Zoë ", "last_name": "O'Brien-Ng"})
    assert response.status_code == 302 and response["Location"] == "/accounts/"
    student.refresh_from_db()
    assert (student.first_name, student.last_name) == ("Zoë", "O'Brien-Ng")
    assert "Your name is saved." in student_client.get("/accounts/").text
    # A last name is optional: not everyone has one.
    assert student_client.post("/accounts/", {"first_name": "Zoë", "last_name": ""}).status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("value, message", HOSTILE)
def test_a_hostile_first_name_is_a_400_with_a_message(student_client, student, value, message):
    response = student_client.post("/accounts/", {"first_name": value, "last_name": "Doe"})
    assert response.status_code == 400 and message in response.text
    student.refresh_from_db()
    assert (student.first_name, student.last_name) == ("", "")


@pytest.mark.django_db
@pytest.mark.parametrize("value, message", [case for case in HOSTILE if case[0].strip()])
def test_a_hostile_last_name_is_a_400_with_a_message(student_client, value, message):
    response = student_client.post("/accounts/", {"first_name": "Eve", "last_name": value})
    assert response.status_code == 400 and message in response.text


@pytest.mark.django_db
@pytest.mark.parametrize("value, message", HOSTILE)
def test_sign_up_asks_for_a_name_and_refuses_a_hostile_one_with_a_message(client, value, message):
    response = client.post("/accounts/signup/", {**SIGNUP, "first_name": value})
    assert response.status_code == 200 and message in response.text
    assert not User.objects.filter(username="newbie").exists()


@pytest.mark.django_db
def test_an_sso_accounts_names_come_from_the_provider_not_the_form(client):
    user = User.objects.create_user("ada", "ada@uni.test", password=None, first_name="Ada", last_name="Lovelace")
    client.force_login(user)
    page = client.get("/accounts/").text
    assert 'name="first_name"' not in page and "Ada Lovelace" in page
    response = client.post("/accounts/", {"first_name": "Mallory", "last_name": ""}, follow=True)
    assert response.status_code == 200 and "change them there" in response.text
    user.refresh_from_db()
    assert user.first_name == "Ada"


@pytest.mark.parametrize("claim, name", [
    ("Grace", "Grace"), ("  Grace \t Brewster ", "Grace Brewster"), ("Gr\u202eace\x00", "Gr ace"),
    ("G" * 500, "G" * NAME_MAX_CHARS), (42, ""), (None, ""), (["Grace"], ""), ({"x": 1}, ""),
])
def test_a_provider_name_claim_is_cleaned_before_it_is_stored(claim, name):
    assert name_from_claim(claim) == name


@pytest.mark.django_db
def test_an_sso_account_takes_its_names_at_creation_and_at_every_log_in():
    user = sso_account_for(issuer="https://idp.test", subject="s-1",
                           claims={"preferred_username": "grace", "given_name": "Grace", "family_name": "Hopper"})
    assert (user.first_name, user.last_name) == ("Grace", "Hopper")
    sso_names_update(user=user, claims={"given_name": "Grace M.", "family_name": "Hopper"})
    user.refresh_from_db()
    assert (user.first_name, user.last_name) == ("Grace M.", "Hopper")
    sso_names_update(user=user, claims={"given_name": 7})  # not text: nothing changes
    user.refresh_from_db()
    assert (user.first_name, user.last_name) == ("Grace M.", "Hopper")


@pytest.mark.django_db
def test_a_linked_local_account_keeps_the_names_its_owner_typed(student):
    User.objects.filter(pk=student.pk).update(first_name="Sam")
    student.refresh_from_db()
    sso_names_update(user=student, claims={"given_name": "Samuel", "family_name": "X"})
    student.refresh_from_db()
    assert (student.first_name, student.last_name) == ("Sam", "")
