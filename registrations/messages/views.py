"""Staff's "Message attendees" page: write, preview the mail and the number of recipients, confirm to send once;
the list of sent messages follows each one's progress.

Thin: it validates with ``MessageForm`` and calls ``registrations.messages.services``. The preview and the send
are two posts of the same form; the confirm step carries one idempotency key rendered with it, so a double-click
(or a retried post) on "Send" writes one message. Works without JavaScript; htmx swaps the form's region.
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from registrations import selectors
from registrations.checkins import selectors as checkin_selectors
from registrations.messages.forms import MessageForm
from registrations.messages.services import (
    AUDIENCE_LABELS,
    AUDIENCES,
    REGISTRANTS,
    audience_count,
    message_send_once,
)
from registrations.notifications import staff_message_mail
from registrations.views import event_or_404
from tems.audit import actor_of
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
@login_required
def message_page(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    counts = _counts(event)
    form = _form(request.POST if request.method == "POST" else None, counts=counts)
    confirm = None
    if request.method == "POST" and form.is_valid():
        if request.POST.get("step") == "send":
            try:
                outcome = message_send_once(
                    event_id=event_id, user_id=user_key(request.user), created_by=request.user.get_username(),
                    idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request),
                    actor=actor_of(request), **form.cleaned_data)
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
            # The preview: the number it will reach, the mail exactly as the relay will send it, and a Send
            # button carrying this step's one key.
            subject, body = staff_message_mail(event=event, subject=form.cleaned_data["subject"],
                                               body=form.cleaned_data["body"])
            confirm = {"count": counts[form.cleaned_data["audience"]],
                       "audience": AUDIENCE_LABELS[form.cleaned_data["audience"]], "key": str(uuid.uuid4()),
                       "mail": {"subject": subject, "body": body}}
    context = {"event": event, "form": form, "confirm": confirm, **_sent_context(request, event_id)}
    status = 400 if request.method == "POST" and not form.is_valid() else 200
    return render(request, f"{PAGE}#message-form" if request.htmx else PAGE, context, status=status)


@require_GET
@login_required
def message_progress(request: HttpRequest, event_id: str) -> HttpResponse:
    """The page's list of sent messages alone: what htmx polls while a message is still being sent."""
    event = event_or_404(event_id)
    return render(request, f"{PAGE}#sent-list", {"event": event, **_sent_context(request, event_id)})


def _sent_context(request: HttpRequest, event_id: str) -> dict:
    try:
        sent = selectors.message_list(event_id=event_id, **page_args(request))
    except DomainError as error:
        raise Http404(error.detail) from None  # a forged or foreign cursor, or a limit out of range
    query = request.GET.urlencode()
    progress_url = reverse("registrations:event_message_progress", kwargs={"event_id": event_id})
    return {"next_url": next_page_url(request, sent), "sending": any(m.done_at is None for m in sent),
            "progress_url": f"{progress_url}?{query}" if query else progress_url,
            "sent": [(message, AUDIENCE_NAMES.get(message.audience, message.audience)) for message in sent]}
