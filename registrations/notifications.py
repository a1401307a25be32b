"""What the outbox relay does with the registrations app's messages: tell the student by e-mail.

Each runs after the change committed (the message exists only if it did). Delivery is at least once; every
mail of one outbox message carries the same ``Message-ID`` (derived from the message id), so a receiver keeps
one and drops the rare repeat: exactly one effect per message, never a repeated registration. Only a verified
address is mailed, within a per-account hourly budget (tems.accounts): anyone can sign up with a stranger's address.
"""

from django.conf import settings
from django.core.mail import EmailMessage

from registrations import selectors
from registrations.errors import RegistrationError
from tems.accounts import notification_recipient
from tems.identity import user_for_key
from tems.outbox import OutboxMessage, message_id_header


def _send(message: OutboxMessage, subject: str, body: str) -> None:
    data = message.data
    # By the immutable key: a deleted student's mail must not reach whoever took the username since.
    user = user_for_key(data["user"])
    if user is None or not user.email:
        return  # a deleted account, a lab's synthetic student, or no address: nobody to tell
    recipient = notification_recipient(user=user)
    if recipient is None:
        return  # unverified, or over its hourly budget: the message is consumed unsent, never retried
    try:
        title = selectors.event_get(event_id=data["event_id"], consistent=False).title
    except RegistrationError:
        title = "an event that has since been removed"
    EmailMessage(subject.format(title=title), body.format(title=title, **data), settings.DEFAULT_FROM_EMAIL,
                 [recipient], headers={"Message-ID": message_id_header(message)}).send()


def registration_created(message: OutboxMessage) -> None:
    if message.data["status"] == "waitlisted":
        _send(message, "On the waiting list: {title}",
              "{title} is full, so you are number {position} on the waiting list.\n"
              "If a seat frees up it goes to the first in line and we will write again.\n\n"
              "Registration {registration_id}")
    else:
        _send(message, "Registered: {title}",
              "You have a seat at {title}. Show the QR code on your TEMS registration page at the door.\n\n"
              "Registration {registration_id}")


def registration_promoted(message: OutboxMessage) -> None:
    _send(message, "You have a seat: {title}",
          "A seat at {title} freed up and it is yours now.\n\nRegistration {registration_id}")


def registration_cancelled(message: OutboxMessage) -> None:
    _send(message, "Cancelled: {title}",
          "Your registration for {title} is cancelled. You can register again while seats last.\n\n"
          "Registration {registration_id}")
