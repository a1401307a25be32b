"""JSON API of a person's data and of an event's answer retention (problem+json errors)."""

from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse

from registrations import selectors as registration_selectors
from registrations import serializers
from registrations.errors import RegistrationError
from registrations.privacy import selectors, services
from registrations.privacy.forms import EraseForm, RetentionForm
from registrations.privacy.views import export_document
from tems.api import api_view, json_response, parse_form
from tems.audit import actor_of


@api_view("GET")
def personal_data(request: HttpRequest) -> HttpResponse:
    """Everything TEMS holds about the caller (registrations.serializers.personal_data_to_dict)."""
    return json_response(export_document(request))


@api_view("POST")
def personal_data_erase(request: HttpRequest) -> HttpResponse:
    """Erase the caller: ``{"confirm": "<their username>"}``; 200 once done, 202 when it is finished later."""
    parse_form(request, EraseForm, RegistrationError, username=request.user.get_username())
    try:
        report = services.personal_data_erase(user=request.user)
    except RegistrationError as error:
        if error.code != "busy":
            raise
        logout(request)
        return json_response({"status": "erasing"}, status=202)
    logout(request)
    return json_response({"status": "erased", "cancelled": report.cancelled}, status=200)


@api_view("GET", "PUT")
def event_retention(request: HttpRequest, event_id: str) -> HttpResponse:
    """An event's answer retention; PUT ``{"days": n | null, "version": v | null}`` (v: the one read)."""
    if request.method == "PUT":
        form = parse_form(request, RetentionForm, RegistrationError)
        retention = services.retention_set(event_id=event_id, days=form.cleaned_data["days"],
                                           expected_version=form.cleaned_data["version"],
                                           updated_by=request.user.get_username(), actor=actor_of(request))
        return json_response(serializers.retention_to_dict(event_id, retention))
    registration_selectors.event_get(event_id=event_id)  # 404 for no such event
    return json_response(serializers.retention_to_dict(event_id, selectors.retention_get(event_id=event_id)))
