"""Tickets that cannot be forged: a registration's QR code is a URL of the app holding a signed token.

The token is Django's ``Signer`` (HMAC with SECRET_KEY and a salt of its own) over the registration's stable
facts: its event, its id and its student. No timestamp, so the same registration always has the same token,
the same URL and the same QR code: a replayed registration response stays byte for byte, and a ticket stays
valid for as long as the registration does (whether it is admissible is the database's decision at the door).

It sits beside the selectors, not in the door's package: a registration's reads give its ticket URL and the door
(``registrations.checkins``) reads tickets, so both stand on it and neither read layer depends on the door.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from django.conf import settings
from django.core import signing

from registrations.errors import RegistrationError
from tems.ids import route_placeholder, route_template

# A salt of its own: no other signed value of the app (sessions, password resets...) can pass as a ticket. It still
# names the module's first home: another salt would void every ticket already issued.
TICKET_SALT = "tems.registrations.checkins.ticket"
TICKET_PATH_MARKER = "/tickets/"
# A scanned text longer than this is not one of our tickets (and is not worth an HMAC).
MAX_TICKET_TEXT = 2000
# The code a student can read out: the start of the registration id, as the registration card shows it. Twelve
# hex digits at least (the card's length); more are accepted up to the whole id, and narrow it further.
SHORT_CODE_MIN = 12
SHORT_CODE_MAX = 32
_SHORT_CODE = re.compile(rf"[0-9a-f]{{{SHORT_CODE_MIN},{SHORT_CODE_MAX}}}")
# What people put between groups of a code they read out or copy: spaces, dashes, dots.
_CODE_SEPARATORS = re.compile(r"[\s.\-]+")


@dataclass(frozen=True)
class Ticket:
    event_id: str
    registration_id: str
    user_id: str


def _signer() -> signing.Signer:
    return signing.Signer(salt=TICKET_SALT)


def ticket_token(*, event_id: str, registration_id: str, user_id: str) -> str:
    """The signed token of a registration (deterministic: same registration, same token)."""
    return _signer().sign_object([event_id, registration_id, user_id])


def ticket_url(*, event_id: str, registration_id: str, user_id: str) -> str:
    """The absolute URL a ticket's QR code encodes: ``TEMS_PUBLIC_URL/tickets/<token>/``."""
    token = ticket_token(event_id=event_id, registration_id=registration_id, user_id=user_id)
    # A token is base64 and colons: never a "/", so always what the route's ``str`` converter accepts.
    path = route_template("checkins:ticket", "token").replace(route_placeholder(0), quote(token, safe=":"), 1)
    return settings.TEMS_PUBLIC_URL + path


def token_from_text(text: str) -> str:
    """The token inside what a door scanned or typed: a whole ticket URL, or the token alone."""
    text = text.strip()
    if TICKET_PATH_MARKER in text:
        path = urlsplit(text).path if "://" in text else text.split("?", 1)[0].split("#", 1)[0]
        text = path.split(TICKET_PATH_MARKER, 1)[1].strip("/")
    return unquote(text)


def short_code(registration_id: str) -> str:
    """The code a student reads out at the door: the first SHORT_CODE_MIN hex digits of the registration id."""
    return registration_id[:SHORT_CODE_MIN]


def short_code_from_text(text: object) -> str | None:
    """The short code in what a doorkeeper typed (any case, grouped with spaces or dashes), or None if the text
    is not one (then it may be a whole ticket)."""
    if not isinstance(text, str) or len(text) > MAX_TICKET_TEXT:
        return None
    code = _CODE_SEPARATORS.sub("", text).lower()
    return code if _SHORT_CODE.fullmatch(code) else None


# Said of a ticket text that did not pass its signature: most often a code typed with a slip, sometimes an altered
# one. Either way the doorkeeper's next step is the same, so the message says that, not "forged".
NOT_READ = ("This ticket code could not be read: it may be mistyped or altered. Scan the QR code, type the "
            "12-character code under it, or search the name.")


def ticket_read(*, text: str) -> Ticket:
    """The ticket a scanned text carries. Raises RegistrationError('invalid') if it is unreadable or forged."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TICKET_TEXT:
        raise RegistrationError("invalid", "This is not a TEMS ticket: scan the QR code, type the ticket code, or "
                                "search the name.", reason="unreadable")
    try:
        value = _signer().unsign_object(token_from_text(text))
    except (signing.BadSignature, ValueError, UnicodeDecodeError):
        raise RegistrationError("invalid", NOT_READ, reason="forged") from None
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(part, str) and part for part in value)):
        raise RegistrationError("invalid", NOT_READ, reason="forged")
    return Ticket(*value)
