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


def staff_menu(request: HttpRequest) -> dict:
    """Which staff links the menu shows: the permissions the person holds in any team (read only if a
    template looks, and then from the roles the request has already read)."""
    from tems.permissions import APPROVALS, EVENT_CREATE, INVENTORY, TEAMS, access_of, holds_anywhere

    user = getattr(request, "user", None)

    def menu() -> dict:
        if user is None or not user.is_authenticated:
            return {}
        return {"event_create": holds_anywhere(user, EVENT_CREATE), "inventory": holds_anywhere(user, INVENTORY),
                "approvals": holds_anywhere(user, APPROVALS),
                "teams": holds_anywhere(user, TEAMS), "platform_admin": access_of(user).platform_admin}

    return {"staff_menu": SimpleLazyObject(menu)}
