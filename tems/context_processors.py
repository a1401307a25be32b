from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject


def demo(request: HttpRequest) -> dict:
    return {"TEMS_DEMO": settings.TEMS_DEMO}


def single_sign_on(request: HttpRequest) -> dict:
    """The name on the "Log in with ..." button, or None while single sign-on is off."""
    return {"sso_name": settings.TEMS_OIDC_NAME if settings.TEMS_OIDC_ISSUER else None}


def email_unverified(request: HttpRequest) -> dict:
    """True for a signed-in account whose address is not proven yet (asked only if a template looks)."""
    from tems.accounts import email_address_verified

    user = getattr(request, "user", None)
    return {"email_unverified": SimpleLazyObject(
        lambda: bool(user is not None and user.is_authenticated and user.email
                     and not email_address_verified(user=user)))}
