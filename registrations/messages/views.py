"""Staff's "Message attendees" page: write, preview the number of recipients, confirm to send once.

Thin: it validates with ``MessageForm`` and calls ``registrations.messages.services``. The preview and the send
are two posts of the same form; the confirm step carries one idempotency key rendered with it, so a double-click
(or a retried post) on "Send" writes one message. Works without JavaScript; htmx swaps the form's region.
"""

import uuid

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from registrations import selectors
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.messages.forms import MessageForm
from registrations.messages.services import (
    AUDIENCE_LABELS,
    AUDIENCES,
    REGISTRANTS,
    audience_count,
    message_send_once,
)
from tems.decorators import staff_required
from tems.errors import DomainError
from tems.http import after_save
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.pagination import next_page_url, page_args

PAGE = "registrations/event_messages.html"
# How the list of sent messages names each audience, the cancellation notice's too.
AUDIENCE_NAMES = {**AUDIENCE_LABELS, REGISTRANTS: "Everyone registered or waiting"}


def _counts(event) -> dict[str, int]:
    checked_in = checkin_selectors.checkin_stats(event_id=event.event_id)["checked_in"]
    seats = selectors.seats_for(event=event)
    return {audience: audience_count(seats=seats, audience=audience, checked_in=checked_in)
            for audience in AUDIENCES}


def _form(data=None, *, counts: dict[str, int]) -> MessageForm:
    form = MessageForm(data)
    form.fields["audience"].choices = [(audience, f"{label} ({counts[audience]})")
                                       for audience, label in AUDIENCE_LABELS.items()]
    return form


@require_http_methods(["GET", "POST"])
@staff_required
def message_page(request: HttpRequest, event_id: str) -> HttpResponse:
    try:
        event = selectors.event_get(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None
    counts = _counts(event)
    form = _form(request.POST if request.method == "POST" else None, counts=counts)
    confirm = None
    if request.method == "POST" and form.is_valid():
        if request.POST.get("step") == "send":
            try:
                outcome = message_send_once(
                    event_id=event_id, user_id=user_key(request.user), created_by=request.user.get_username(),
                    idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request),
                    **form.cleaned_data)
            except DomainError as error:
                if error.code == "not_found":
                    raise Http404(error.detail) from None
                form.add_error(None, error.detail)
            else:
                audience = AUDIENCE_LABELS[form.cleaned_data["audience"]].lower()
                if not outcome.replayed:
                    messages.success(request, f"Sending “{form.cleaned_data['subject']}” to {audience} attendees "
                                              f"({counts[form.cleaned_data['audience']]}). Progress is below.")
                return after_save(request, reverse("registrations:event_messages", kwargs={"event_id": event_id}))
        elif request.POST.get("step") == "preview":
            # The preview: the number it will reach, and a Send button carrying this step's one key.
            confirm = {"count": counts[form.cleaned_data["audience"]],
                       "audience": AUDIENCE_LABELS[form.cleaned_data["audience"]], "key": str(uuid.uuid4())}
    try:
        sent = selectors.message_list(event_id=event_id, **page_args(request))
    except DomainError as error:
        raise Http404(error.detail) from None  # a forged or foreign cursor, or a limit out of range
    context = {"event": event, "form": form, "confirm": confirm, "next_url": next_page_url(request, sent),
               "sent": [(message, AUDIENCE_NAMES.get(message.audience, message.audience)) for message in sent]}
    status = 400 if request.method == "POST" and not form.is_valid() else 200
    return render(request, f"{PAGE}#message-form" if request.htmx else PAGE, context, status=status)
