"""The links of an offer mail: signed, so a link opens one student's offer and no one else's.

The token is Django's ``TimestampSigner`` (HMAC with SECRET_KEY and a salt of its own) over the offer's student
and registration. Opening the link only shows a page: accepting or declining is a POST from that page's form,
because mail scanners and link previews fetch every link in a mail and must not answer anyone's offer. The
token stops opening anything once no offer could still be open (the longest window and a day more): the offer's
own end is the database's decision, not the link's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.urls import reverse

from registrations.errors import RegistrationError
from registrations.events.models import MAX_OFFER_HOURS

OFFER_LINK_SALT = "tems.registrations.offer-link"
OFFER_LINK_MAX_AGE = timedelta(hours=MAX_OFFER_HOURS + 24)


@dataclass(frozen=True)
class OfferLink:
    user_id: str
    registration_id: str


def offer_token(*, user_id: str, registration_id: str) -> str:
    return signing.TimestampSigner(salt=OFFER_LINK_SALT).sign_object({"u": user_id, "r": registration_id})


def offer_url(*, user_id: str, registration_id: str) -> str:
    """The absolute URL of the offer's page, for the mail."""
    token = offer_token(user_id=user_id, registration_id=registration_id)
    return settings.TEMS_PUBLIC_URL + reverse("registrations:offer_page", kwargs={"token": token})


def offer_link_read(token: str) -> OfferLink:
    """The offer a link's token names; RegistrationError('not_found') for a forged, altered or stale one."""
    try:
        data = signing.TimestampSigner(salt=OFFER_LINK_SALT).unsign_object(
            token, max_age=OFFER_LINK_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired is one
        raise RegistrationError("not_found", "This offer link is not valid (or too old).") from None
    if not isinstance(data, dict) or not isinstance(data.get("u"), str) or not isinstance(data.get("r"), str):
        raise RegistrationError("not_found", "This offer link is not valid (or too old).")
    return OfferLink(user_id=data["u"], registration_id=data["r"])
