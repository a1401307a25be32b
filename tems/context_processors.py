from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject


def demo(request: HttpRequest) -> dict:
    return {"TEMS_DEMO": settings.TEMS_DEMO}


def email_unverified(request: HttpRequest) -> dict:
    """True for a signed-in account whose address is not proven yet (asked only if a template looks)."""
    from tems.accounts import email_address_verified

    user = getattr(request, "user", None)
    return {"email_unverified": SimpleLazyObject(
        lambda: bool(user is not None and user.is_authenticated and user.email
                     and not email_address_verified(user=user)))}
