import pytest
from django.contrib.auth.models import User


@pytest.mark.django_db
def test_student_signs_up_and_is_logged_in(client, moto_ddb):
    response = client.post("/accounts/signup/", {"first_name": "Nadia", "last_name": "Okafor", "username": "newbie",
                                                 "email": "newbie@uni.test", "password1": "a-Long-pass-2026",
                                                 "password2": "a-Long-pass-2026"})
    assert response.status_code == 302
    user = User.objects.get(username="newbie")
    assert (user.first_name, user.last_name) == ("Nadia", "Okafor")
    assert not user.is_staff
    page = client.get("/events/").content.decode()
    assert "Signed in as <strong>newbie</strong>" in page


@pytest.mark.django_db
def test_weak_password_is_refused_with_a_message(client):
    response = client.post("/accounts/signup/", {"first_name": "X", "username": "x", "email": "x@uni.test",
                                                 "password1": "123", "password2": "123"})
    assert response.status_code == 200
    assert "This password is too short" in response.content.decode()
    assert not User.objects.filter(username="x").exists()


@pytest.mark.django_db
def test_log_in_page_and_log_out(client, student):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "student1", "password": "pw-student-1"})
    assert response.status_code == 302
    assert client.post("/accounts/logout/").status_code == 302
