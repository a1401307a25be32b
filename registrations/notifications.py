"""What the outbox relay does with the registrations app's messages: tell the student by e-mail.

Each runs after the change committed (the message exists only if it did). Delivery is at least once; every
mail of one outbox message carries the same ``Message-ID`` (derived from the message id), so a receiver keeps
one and drops the rare repeat: exactly one effect per message, never a repeated registration. Only a verified
address is mailed, within a per-account hourly budget (tems.accounts): anyone can sign up with a stranger's address.
"""

from django.conf import settings
from django.core.mail import EmailMessage
from django.urls import reverse

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.messages.models import EventMessage
from registrations.models import CONFIRMED
from registrations.offers.links import offer_url
from registrations.ticket_tokens import ticket_url
from tems.accounts import notification_recipient
from tems.identity import user_for_key
from tems.outbox import OutboxMessage, mail_headers
from tems.templatetags.when import when_text


def _send(message: OutboxMessage, subject: str, body: str, *, ticket: bool = False) -> None:
    data = message.data
    # By the immutable key: a deleted student's mail must not reach whoever took the username since.
    user = user_for_key(data["user"])
    if user is None or not user.email:
        return  # a deleted account, a lab's synthetic student, or no address: nobody to tell
    recipient = notification_recipient(user=user)
    if recipient is None:
        return  # unverified, or over its hourly budget: the message is consumed unsent, never retried
    try:
        event = selectors.event_get(event_id=data["event_id"], consistent=False)
    except RegistrationError:
        event = None
    title = event.title if event else "an event that has since been removed"
    body = body.format(title=title, **data) + _details(event, data, ticket=ticket)
    EmailMessage(subject.format(title=title), body, settings.DEFAULT_FROM_EMAIL,
                 [recipient], headers=mail_headers(message)).send()


def _details(event, data: dict, *, ticket: bool) -> str:
    """When and where, and the links: every mail says them, so nobody has to open TEMS to find out."""
    if event is None:
        return ""
    starts = when_text(event.starts_at)
    page = settings.TEMS_PUBLIC_URL + reverse("registrations:event_detail", kwargs={"event_id": event.event_id})
    lines = ["", "", f"When:  {starts}", f"Where: {event.location or 'to be announced'}", f"Event: {page}"]
    if ticket:
        lines.append("Ticket: " + ticket_url(event_id=event.event_id, registration_id=data["registration_id"],
                                             user_id=data["user"]))
    lines.append("My registrations: " + settings.TEMS_PUBLIC_URL + reverse("registrations:my_registrations"))
    return "\n".join(lines)


def registration_created(message: OutboxMessage) -> None:
    if message.data["status"] == "waitlisted":
        # The join's own count, an upper bound (messages written before it was labelled so call it "position").
        at_most = message.data.get("position_at_most", message.data.get("position"))
        _send(message, "On the waiting list: {title}",
              f"{{title}} is full, so you are on the waiting list: number {at_most} or nearer the front "
              "(My registrations shows your exact place).\n"
              "What happens next: you need do nothing. When someone cancels, the freed seat goes to the first in "
              "line; when it is yours we e-mail you at once and your ticket is on the event page. If you can no "
              "longer come, leave the waiting list on My registrations so the next person moves up.\n\n"
              "Registration {registration_id}")
    else:
        _send(message, "Registered: {title}",
              "You have a seat at {title}. Show the QR code of your ticket (link below) at the door.\n\n"
              "Registration {registration_id}", ticket=True)


def registration_promoted(message: OutboxMessage) -> None:
    _send(message, "You have a seat: {title}",
          "A seat at {title} freed up and it is yours now. Show the QR code of your ticket (link below) at the "
          "door.\n\nRegistration {registration_id}", ticket=True)


def seat_offered(message: OutboxMessage) -> None:
    data = message.data
    ends = when_text(data["ends_at"])
    link = offer_url(user_id=data["user"], registration_id=data["registration_id"])
    _send(message, "A seat is yours if you want it: {title}",
          f"A seat at {{title}} freed up and you are first in line. It is held for you until {ends}.\n\n"
          f"Accept or decline here: {link}\n\n"
          "If you do nothing, the seat goes to the next person in line at that time.\n\n"
          "Registration {registration_id}")


def registration_cancelled(message: OutboxMessage) -> None:
    if message.data.get("previous_status") == "offered":
        _send(message, "Seat passed on: {title}",
              "The seat at {title} that was held for you went to the next in line (you declined it, or its time "
              "ran out). You can register again while seats last.\n\nRegistration {registration_id}")
        return
    _send(message, "Cancelled: {title}",
          "Your registration for {title} is cancelled. You can register again while seats last.\n\n"
          "Registration {registration_id}")


def event_message_mail(message: OutboxMessage) -> None:
    """One recipient's copy of a staff message, reminder or cancellation notice (queued by
    registrations.messages.services).

    Its outbox id, and so its Message-ID, is derived from the message and the registration: a copy sent again
    after a relay died between the SMTP server's answer and the outbox delete is the same mail to the receiver.
    A reminder is not sent for an event called off since, nor to someone no longer registered.
    """
    data = message.data
    try:
        sent = EventMessage.get(*EventMessage.key_for(data["event_id"], data["message_id"]))
    except EventMessage.DoesNotExist:
        return
    if sent.kind == EventMessage.REMINDER:
        try:
            event = selectors.event_get(event_id=data["event_id"], consistent=False)
        except RegistrationError:
            return
        claim = selectors.claim_get(event_id=event.event_id, user_id=data["user"])
        if (event.is_cancelled or claim is None or claim.registration_id != data["registration_id"]
                or claim.status != CONFIRMED):
            return
        _send(message, "Reminder: {title}",
              "A reminder: you have a seat at {title}. Show the QR code of your ticket (link below) at the door. "
              "If you can no longer come, cancel on My registrations so someone on the waiting list gets your seat."
              "\n\nRegistration {registration_id}", ticket=True)
        return
    if sent.kind == EventMessage.CANCELLATION:
        # Registrations stand as they were when the event was called off (nothing admits, promotes or cancels
        # after it), so everyone the fan-out listed is told; the calendar file of each now says CANCELLED.
        _send(message, "Cancelled: {title}",
              "{title} has been cancelled by the organisers. Your seat or place on the waiting list no longer "
              "stands and there is nothing you need to do. If you added it to your calendar, the calendar file "
              "on My registrations now marks it cancelled.\n\nRegistration {registration_id}")
        return
    # Staff's words are sent as they wrote them: braces in them are text, not placeholders.
    _send(message, "{title}: " + _literal(sent.subject),
          _literal(sent.body) + "\n\n(Sent by the organisers of {title}.)")


def _literal(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")
