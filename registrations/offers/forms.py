"""The offer's two buttons, shown on the event page, in My registrations and on the page a mail's link opens."""

import uuid


def offer_buttons() -> list[tuple[str, str, str, str, str]]:
    """Accept and Decline as (action, label, busy words, a fresh key each, class): two taps, two keys."""
    return [("accept", "Accept the seat", "Accepting…", str(uuid.uuid4()), "button primary"),
            ("decline", "Decline", "Declining…", str(uuid.uuid4()), "button danger")]

