"""Page answers shared by every app: log-in redirects for htmx and posts, error pages, favicon, quiet refusals."""

import logging
import logging.config

import pytest
from django.conf import settings
from django.test import Client

from tems.log_filters import RefusalsOnOneLine


# An event's own page may be public, so the login-only pages stand for every page that asks for a log-in.
@pytest.mark.parametrize("url", ["/me/registrations/", "/events/past/"])
def test_htmx_request_after_the_session_expired_navigates_the_whole_page_back_to_where_it_was(url, db):
    response = Client().get(url, HTTP_HX_REQUEST="true",
                            HTTP_HX_CURRENT_URL="http://testserver/events/abc123/?tab=1")
    assert response.status_code == 200 and response.content == b""
    assert response["HX-Redirect"] == "/accounts/login/?next=%2Fevents%2Fabc123%2F%3Ftab%3D1"


def test_htmx_post_after_the_session_expired_never_sends_next_to_the_post_url(db):
    response = Client().post("/events/abc123/register/", HTTP_HX_REQUEST="true",
                             HTTP_HX_CURRENT_URL="http://testserver/events/abc123/")
    assert response["HX-Redirect"] == "/accounts/login/?next=%2Fevents%2Fabc123%2F"


def test_plain_post_after_the_session_expired_comes_back_to_the_referring_page(db):
    response = Client().post("/events/abc123/register/", HTTP_REFERER="http://testserver/events/abc123/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=%2Fevents%2Fabc123%2F"
    # Another site's page is never a place to return to, and no next beats a POST-only one.
    response = Client().post("/events/abc123/register/", HTTP_REFERER="https://evil.example/")
    assert response["Location"] == "/accounts/login/"


def test_plain_get_keeps_djangos_own_next(db):
    assert Client().get("/me/registrations/")["Location"] == "/accounts/login/?next=/me/registrations/"


def test_unknown_address_gets_a_friendly_404_not_the_exception_class(db, student_client):
    page = student_client.get("/no/such/page/")
    assert page.status_code == 404
    text = page.content.decode()
    assert "Resolver404" not in text and "There is nothing at this address" in text and "<html" in text


def test_favicon_is_linked_and_served(db, student_client):
    from django.contrib.staticfiles import finders

    response = student_client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.ico"
    assert open(finders.find("favicon.ico"), "rb").read(4) == b"\x00\x00\x01\x00"  # an ICO file
    assert 'rel="icon" href="/static/favicon.ico"' in student_client.get("/accounts/verify-email/").content.decode()


def test_a_students_403_is_logged_on_one_line(db, student_client, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert student_client.get("/inventory/").status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert len(records) == 1 and records[0].exc_info is None and "Traceback" not in caplog.text


def test_django_records_reach_the_console_once():
    logging.config.dictConfig(settings.LOGGING)
    assert logging.getLogger("django").handlers == []
    assert any(isinstance(f, RefusalsOnOneLine) for f in logging.getLogger("django.request").filters)
