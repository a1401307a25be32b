from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.messages.views import SuccessMessageMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from tems import accounts
from tems.api import problem
from tems.forms import NamesForm, PasswordResetForm, SignUpForm
from tems.idempotency import DEFAULT_POLICY, MAX_KEY_CHARS, RECORD_TTL, TRANSIENT_STATUSES


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if request.path.startswith("/api/"):
        return problem(403, f"CSRF check failed ({reason}). Send the csrftoken cookie's value in X-CSRFToken.")
    response = render(request, "403_csrf.html", {"reason": reason}, status=403)
    # Tells static/js/tems-idempotency.js this 403 is a stale token, which it refreshes and retries the tap with.
    response["TEMS-Error"] = "csrf"
    return response


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("registrations:event_list")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="tems.identity.IdentityModelBackend")
        _send_verification(request, user)
        return redirect("registrations:event_list")
    return render(request, "registration/signup.html", {"form": form})


def _send_verification(request: HttpRequest, user) -> None:
    try:
        accounts.email_verification_send(request=request, user=user)
    except accounts.AccountError as error:
        messages.error(request, error.detail)
    else:
        messages.info(request, f"We sent a link to {user.email}: open it to confirm your address. Until then "
                               "TEMS sends you no other e-mail.")


@login_required
@require_http_methods(["GET", "POST"])
def verify_email(request: HttpRequest) -> HttpResponse:
    """Where an account sees whether its address is proven, and asks for another link."""
    if request.method == "POST":
        _send_verification(request, request.user)
        return redirect("verify_email")
    return render(request, "registration/verify_email.html",
                  {"verified": accounts.email_address_verified(user=request.user)})


@require_http_methods(["GET", "POST"])
def verify_email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    # Opening the link only shows a button: mail scanners fetch links, and a fetch must not prove an address.
    if request.method == "GET":
        return render(request, "registration/verify_email_confirm.html", {"token": token})
    try:
        user = accounts.email_verify(token=token)
    except accounts.AccountError as error:
        return render(request, "registration/verify_email_confirm.html", {"token": token, "error": error.detail},
                      status=error.status)
    messages.success(request, f"Thank you: {user.email} is confirmed, and TEMS will mail you about your "
                              "registrations.")
    return redirect("registrations:event_list" if request.user.is_authenticated else "login")


@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    """The account page: the person's names (editable for a local account; an SSO account's come from the
    provider), the address and whether it is proven, the password, the university account it is linked to (or the
    button that links one), and the way to the person's own data."""
    local = request.user.has_usable_password()
    form = NamesForm(request.POST if request.method == "POST" and local else None, instance=request.user)
    if request.method == "POST":
        if not local:
            messages.error(request, f"Your names come from {settings.TEMS_OIDC_NAME}: change them there.")
            return redirect("account")
        if form.is_valid():
            form.save()
            messages.success(request, "Your name is saved.")
            return redirect("account")
    links = list(request.user.sso_identities.all())
    issuer = settings.TEMS_OIDC_ISSUER
    return render(request, "registration/account.html", {
        "names_form": form if local else None,
        "has_password": local,
        "verified": accounts.email_address_verified(user=request.user),
        "sso_name": settings.TEMS_OIDC_NAME,
        "sso_links": links,
        "can_link": bool(issuer) and not any(link.issuer == issuer for link in links),
        **_calendar_feed_links(request.user),
    }, status=400 if form.errors else 200)


def _calendar_feed_links(user) -> dict:
    """The account's calendar feed link, as calendar apps take it: ``webcal://`` opens the calendar app to
    subscribe, the https link is for pasting into a web calendar ("From URL")."""
    url = (settings.TEMS_PUBLIC_URL + reverse("registrations:calendar_feed") + "?"
           + urlencode({"token": accounts.calendar_feed_token(user=user)}))
    return {"feed_url": url, "feed_webcal_url": "webcal://" + url.split("://", 1)[1]}


@login_required
@require_POST
def calendar_feed_revoke(request: HttpRequest) -> HttpResponse:
    """"Replace the link": every calendar feed link of the account handed out so far stops working."""
    accounts.calendar_feed_revoke(user=request.user)
    messages.success(request, "Your old calendar link no longer works. Subscribe again with the new link below.")
    return redirect("account")


class PasswordResetView(auth_views.PasswordResetView):
    """"Forgot password?": Django's view, mailing only proven addresses within the hourly mail budget. The page
    after it reads the same whether or not the address has an account."""

    form_class = PasswordResetForm
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "hours": _reset_hours()}

    def form_valid(self, form):
        self.extra_email_context = {"hours": _reset_hours()}
        return super().form_valid(form)


def _reset_hours() -> str:
    return f"{settings.PASSWORD_RESET_TIMEOUT / 3600:g}"


class PasswordChangeView(SuccessMessageMixin, auth_views.PasswordChangeView):
    """Django's password change (the old password, then the new one twice); this session stays logged in and
    every other session of the account ends. An SSO account has no password to change."""

    success_url = reverse_lazy("account")
    success_message = "Your password is changed. Other devices logged in to your account are logged out."

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not request.user.has_usable_password():
            messages.error(request, f"You log in with {settings.TEMS_OIDC_NAME}: TEMS keeps no password for you.")
            return redirect("account")
        return super().dispatch(request, *args, **kwargs)


def login_locked_out(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: dict | None = None) -> HttpResponse:
    """django-axes' answer once an account and address are locked out (its AXES_LOCKOUT_CALLABLE)."""
    minutes = max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    response = render(request, "registration/locked_out.html", {"username": username, "minutes": minutes},
                      status=429)
    response["Retry-After"] = str(minutes * 60)
    return response


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    # Browsers ask for /favicon.ico whatever the page links; send them to the hashed static file.
    return redirect(static("favicon.ico"), permanent=True)


# How long a registration's retries of a contended transaction can take before its 503 (registrations'
# MAX_CONFLICTS pauses of at most CONFLICT_MAX_DELAY, rounded up); the policy page states it.
CONTENTION_SECONDS = 3


@require_GET
def idempotency_policy(request: HttpRequest) -> HttpResponse:
    """The published Idempotency-Key policy that every idempotency error links to; its numbers are the code's."""
    return render(request, "idempotency_policy.html", {
        "max_key_chars": MAX_KEY_CHARS,
        "retention_hours": int(RECORD_TTL.total_seconds() // 3600),
        "transient_statuses": ", ".join(str(status) for status in sorted(TRANSIENT_STATUSES)),
        "wait_seconds": f"{DEFAULT_POLICY.max_wait:g}",
        "lease_seconds": int(DEFAULT_POLICY.lease.total_seconds()),
        "contention_seconds": CONTENTION_SECONDS,
    })
