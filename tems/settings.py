"""TEMS settings. Every knob is read from the environment here, and only here, with safe local defaults."""

import os
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


# --- Security -------------------------------------------------------------------------------------------
# Safe by default: DEBUG is off and a deployment must bring its own secret key. DJANGO_DEBUG=1 is for a developer's
# machine (`make run` and the test run set it).
DEBUG = _env_bool("DJANGO_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it to a long random value (see docs/DEPLOY.md), "
            "or set DJANGO_DEBUG=1 on a developer's machine."
        )
    SECRET_KEY = "tems-insecure-local-development-key-change-me"
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# Behind a load balancer that ends TLS, e.g. "X-Forwarded-Proto: https". Only set it when the balancer always
# overwrites that header: otherwise a client could claim HTTPS itself.
_proxy_ssl_header = os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _proxy_ssl_header:
    _header, _, _value = _proxy_ssl_header.partition(":")
    if not _value.strip():
        raise ImproperlyConfigured('DJANGO_SECURE_PROXY_SSL_HEADER must look like "X-Forwarded-Proto: https".')
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _header.strip().upper().replace("-", "_"), _value.strip())
# How many proxies of ours append to X-Forwarded-For: the log-in lockout reads the client address from there.
TEMS_TRUSTED_PROXY_COUNT = int(os.environ.get("TEMS_TRUSTED_PROXY_COUNT", "0"))

# Production serves HTTPS only. DJANGO_HTTPS=0 turns redirect, HSTS and secure cookies off together, for a
# plain-HTTP run with DEBUG off (a load test on one machine, a private network); DEBUG implies it.
HTTPS = not DEBUG and _env_bool("DJANGO_HTTPS", True)
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
# A year, the value browsers' preload lists ask for; includeSubDomains and preload only make the site eligible,
# submitting it to a preload list stays a human decision.
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000")) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS and _env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = HTTPS and _env_bool("DJANGO_HSTS_PRELOAD", True)
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions: logging out ends the session on every server. Rejected: signed cookies (a logged-out
# or stolen cookie stays valid until it expires) and cached_db with a per-process cache (a session flushed on one
# server lives on in the others' caches).
SESSION_ENGINE = "django.contrib.sessions.backends.db"
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# Django's own CSP, in development too, so a page that needs an inline script or style fails on the developer's
# screen and in the browser tests, not first in production. Everything TEMS serves is a static file of its own.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

# Log-in throttling (django-axes): after TEMS_LOGIN_FAILURE_LIMIT wrong passwords for one account from one
# address, that pair is locked out for TEMS_LOGIN_COOLOFF_MINUTES, on /accounts/login/ and /admin/login/ alike.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # ModelBackend with the user's identity joined into the per-request user read (tems.identity).
    "tems.identity.IdentityModelBackend",
    # The university's single sign-on; answers only the SSO callback's call, and only when configured.
    "tems.oidc.OidcBackend",
    # Still listed so that sessions logged in before the backend above existed stay valid (a session names the
    # backend that logged it in); it authenticates nobody new, as the one above answers first.
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("TEMS_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("TEMS_LOGIN_COOLOFF_MINUTES", "15")))
# Account and address together: by account alone anyone could lock a student out of their own account.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "tems.views.login_locked_out"
AXES_CLIENT_IP_CALLABLE = "tems.accounts.client_ip"
AXES_VERBOSE = False

# Single sign-on (tems/oidc.py): the university's OpenID Connect provider, off while TEMS_OIDC_ISSUER is unset, and
# local accounts work either way. Only the issuer is configured: its endpoints and keys come from its discovery
# document, read on the first SSO log-in, never at start-up.
TEMS_OIDC_ISSUER = os.environ.get("TEMS_OIDC_ISSUER", "").strip()
TEMS_OIDC_CLIENT_ID = os.environ.get("TEMS_OIDC_CLIENT_ID", "").strip()
TEMS_OIDC_CLIENT_SECRET = os.environ.get("TEMS_OIDC_CLIENT_SECRET", "")
if TEMS_OIDC_ISSUER and not (TEMS_OIDC_CLIENT_ID and TEMS_OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("TEMS_OIDC_ISSUER is set: set TEMS_OIDC_CLIENT_ID and TEMS_OIDC_CLIENT_SECRET too, "
                               "as the university registered TEMS with its provider.")
# What the log-in button says: "Log in with <this>".
TEMS_OIDC_NAME = os.environ.get("TEMS_OIDC_NAME", "your university").strip()
# mozilla-django-oidc's own knobs. RS256 is what providers sign ID tokens with unless told otherwise; PKCE and a
# nonce bind the code and the token to the browser that started the log-in.
OIDC_RP_SIGN_ALGO = os.environ.get("TEMS_OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_callback"
# Kept in the session for the provider's log-out (tems.oidc.provider_logout_url), and gone with the session.
OIDC_STORE_ID_TOKEN = True

# E-mail verification and per-user mail budgets. Counters live in the database, so they hold across servers.
TEMS_EMAIL_VERIFICATION_MAX_AGE = timedelta(days=int(os.environ.get("TEMS_EMAIL_VERIFICATION_DAYS", "3")))
TEMS_VERIFICATION_MAILS_PER_HOUR = int(os.environ.get("TEMS_VERIFICATION_MAILS_PER_HOUR", "3"))
TEMS_NOTIFICATION_MAILS_PER_HOUR = int(os.environ.get("TEMS_NOTIFICATION_MAILS_PER_HOUR", "12"))
# A password reset link (Django's token) works once, and for this long: long enough for a slow mail to arrive,
# short enough that a link left in an old mailbox is useless.
PASSWORD_RESET_TIMEOUT = int(float(os.environ.get("TEMS_PASSWORD_RESET_HOURS", "2")) * 3600)
# ---------------------------------------------------------------------------------------------------------

# Demo mode opens the lab to everyone and shows the demo log-ins on the log-in page.
TEMS_DEMO = _env_bool("TEMS_DEMO", False)
# The audit log's retention (tems.audit): a team's default, and the range a team admin may set it within.
TEMS_AUDIT_RETENTION_DAYS = int(os.environ.get("TEMS_AUDIT_RETENTION_DAYS", "365"))
TEMS_AUDIT_RETENTION_MIN_DAYS = 30
TEMS_AUDIT_RETENTION_MAX_DAYS = 3650
# How many events `seed_demo`'s term holds (at least 21: the term's offer and its cancelled event are among the
# first 21). About sixty show a newcomer a term in use; a test of the seeding itself needs fewer.
TEMS_DEMO_TERM_EVENTS = max(21, int(os.environ.get("TEMS_DEMO_TERM_EVENTS", "60")))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "tems",
    "registrations",
    "inventory",
    "lab",
]

MIDDLEWARE = [
    "tems.health.HealthCheckMiddleware",
    # Outside everything else: times each request and sees every answer (tems/telemetry.py).
    "tems.middleware.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Outside CSRF and every view: sees each /api/ answer, and routes HEAD as GET.
    "tems.middleware.ApiProblemMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Inside HtmxMiddleware (it reads request.htmx): a log-in redirect for htmx or a post becomes a whole-page one.
    "tems.http.LoginRedirectMiddleware",
    # Once the route is known: its permission in tems.permissions.ROUTES decides whether the view runs.
    "tems.permissions.PermissionMiddleware",
    "tems.ratelimit.WriteRateMiddleware",
    # Last, as django-axes asks: it turns a lockout signalled during authentication into the lockout page.
    "axes.middleware.AxesMiddleware",
]


def _write_rate() -> int:
    raw = os.environ.get("TEMS_WRITE_RATE", "60").strip()
    if not raw.isdigit():
        raise RuntimeError(f"TEMS_WRITE_RATE must be a whole number of requests a minute (0: no limit), got {raw!r}.")
    return int(raw)


# Unsafe requests (POST/PUT/PATCH/DELETE) per minute per logged-in user, counted in DynamoDB (tems/ratelimit.py).
# 60 is far above any person's tapping and far below what a script needs to flood the outbox; 0 turns the limit
# off, as load tests and `make bench` need.
TEMS_WRITE_RATE = _write_rate()

ROOT_URLCONF = "tems.urls"
WSGI_APPLICATION = "tems.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tems.context_processors.demo",
                "tems.context_processors.single_sign_on",
                "tems.context_processors.email_unverified",
                "tems.context_processors.staff_menu",
            ],
        },
    },
]

# Users and sessions live in Django's own database; everything of the domain lives in DynamoDB.
DATA_DIR = Path(os.environ.get("TEMS_DATA_DIR", BASE_DIR / ".data"))
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'db.sqlite3'}"), conn_max_age=60
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Concurrent writers wait for SQLite's one write lock instead of failing. A transaction that starts as a read
    # and then writes (get_or_create, update_or_create, a session save) cannot wait for it: SQLite answers
    # "database is locked" at once rather than deadlock two such upgraders, and that was a 500. IMMEDIATE takes
    # the lock at BEGIN, where the timeout (seconds; writes hold it for milliseconds) does apply. No WAL: the test
    # database is deleted and made again under the same name, and a WAL file left by an interrupted run would be
    # replayed into the new one.
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE",
                                       **DATABASES["default"].get("OPTIONS", {})}  # the URL's own win
    # Tests: the browser tests' live server answers concurrent taps on threads, and an in-memory test database is
    # one connection shared by all of them (sqlite3 "bad parameter or other API misuse", a 500 on a double tap).
    # A file gives each thread its own connection; pytest-xdist adds a per-worker suffix to the name.
    DATABASES["default"]["TEST"] = {"NAME": str(Path(tempfile.gettempdir()) / f"tems-test-{BASE_DIR.name}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "registrations:event_list"
LOGOUT_REDIRECT_URL = "login"

# The API answers a CSRF failure with problem+json instead of Django's HTML page.
CSRF_FAILURE_VIEW = "tems.views.csrf_failure"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = os.environ.get("TEMS_TIME_ZONE", "Europe/London")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# jsQR (the door page's QR decoder where the browser has no BarcodeDetector) is vendored by `npm ci` and served
# from node_modules as it was installed, never from a CDN.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/jsqr", BASE_DIR / "node_modules" / "jsqr" / "dist")]
STATIC_ROOT = BASE_DIR / "staticfiles"

# DynamoDB: an unset endpoint means real AWS with credentials from the usual AWS chain.
DYNAMODB_ENDPOINT_URL = os.environ.get("DYNAMODB_ENDPOINT_URL") or None
DYNAMODB_TABLE = os.environ.get("DYNAMODB_TABLE", "tems")
AWS_REGION = os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "eu-west-1"))

# Where the app is reached from outside: ticket QR codes encode an absolute URL under it.
TEMS_PUBLIC_URL = os.environ.get("TEMS_PUBLIC_URL", "http://localhost:8000").rstrip("/")

# Side effects leave DynamoDB only through the outbox; the relay hands each message type to one of these.
OUTBOX_HANDLERS = {
    "RegistrationCreated": "registrations.notifications.registration_created",
    "RegistrationPromoted": "registrations.notifications.registration_promoted",
    "RegistrationCancelled": "registrations.notifications.registration_cancelled",
    "WaitlistPromotionRequested": "registrations.events.services.waitlist_promotion_requested",
    "CheckInRecorded": "registrations.checkins.notifications.checkin_recorded",
    "CheckInUndone": "registrations.checkins.notifications.checkin_undone",
    "StaffMessageRequested": "registrations.messages.services.message_fan_out",
    "ReminderRequested": "registrations.messages.services.message_fan_out",
    "EventMessageFanOut": "registrations.messages.services.message_fan_out",
    "EventCancellationRequested": "registrations.messages.services.message_fan_out",
    "EventMessageMail": "registrations.notifications.event_message_mail",
    "SeatOffered": "registrations.notifications.seat_offered",
    "SeatCopiesRequested": "registrations.seating.holds.seat_copies_requested",
}
# Jobs the relay runs besides delivering messages, each at most once per RELAY_JOB_INTERVAL_SECONDS per relay
# process (tems.outbox.run_periodic_jobs): they write outbox messages under deterministic keys, so any number of
# relays may run them.
# How tems.permissions finds the team of the object a route's URL argument names (raises NoSuchObject).
TEMS_PERMISSION_SCOPES = {
    "event_id": "registrations.selectors.event_team",
    # A draft's approvers are in the team that oversees the event's team, not in the event's own.
    "draft_id": "registrations.approvals.selectors.draft_overseer",
    "sku": "inventory.selectors.item_team",
    "team_id": "tems.teams.selectors.team_of",
}
RELAY_PERIODIC_JOBS = {
    "event_reminders": "registrations.messages.services.reminders_sweep",
    "answers_retention": "registrations.privacy.services.answers_retention_sweep",
    "erasures_resume": "registrations.privacy.services.erasures_resume",
    "offer_expiries": "registrations.offers.services.offers_sweep",
    # The team's own log rows past the team's retention (DynamoDB's entries expire by TTL).
    "team_audit_retention": "tems.teams.services.team_audit_sweep",
}
RELAY_JOB_INTERVAL_SECONDS = float(os.environ.get("TEMS_RELAY_JOB_INTERVAL_SECONDS", "60"))
# Without DJANGO_EMAIL_HOST, mails are printed where `make run` runs; with it, they go out over SMTP (STARTTLS and
# a log-in when DJANGO_EMAIL_USE_TLS / DJANGO_EMAIL_HOST_USER are set, as Amazon SES and most relays require).
_email_host = os.environ.get("DJANGO_EMAIL_HOST")
MAILERS = {
    "default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": _email_host, "port": int(os.environ.get("DJANGO_EMAIL_PORT", "25")),
                            "username": os.environ.get("DJANGO_EMAIL_HOST_USER") or None,
                            "password": os.environ.get("DJANGO_EMAIL_HOST_PASSWORD") or None,
                            "use_tls": _env_bool("DJANGO_EMAIL_USE_TLS", False), "timeout": 30}}
    if _email_host else {"BACKEND": "django.core.mail.backends.console.EmailBackend"},
}
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "TEMS <events@tems.invalid>")

# Logs (tems/logs.py): one JSON object a line on stdout, CloudWatch's Embedded Metric Format in the lines that
# carry metrics; "console" for a person at a terminal, the default with DEBUG on.
TEMS_LOG_FORMAT = os.environ.get("TEMS_LOG_FORMAT", "console" if DEBUG else "json").strip().lower()
# Each request's line counts its DynamoDB requests and the capacity they report. Transactions do not ask for
# theirs (DynamoDB Local answers a transaction that asks measurably later); TEMS_LOG_CAPACITY=1 makes every
# request ask, so the line has the whole capacity.
TEMS_LOG_CAPACITY = _env_bool("TEMS_LOG_CAPACITY", False)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"refusals_on_one_line": {"()": "tems.log_filters.RefusalsOnOneLine"},
                "idle_relay_passes_left_out": {"()": "tems.log_filters.IdleRelayPassesLeftOut"}},
    "formatters": {"structured": {"()": "tems.logs.formatter", "log_format": TEMS_LOG_FORMAT}},
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout",
                             "formatter": "structured",
                             "filters": ["idle_relay_passes_left_out"] if TEMS_LOG_FORMAT == "console" else []}},
    "root": {"handlers": ["console"], "level": os.environ.get("TEMS_LOG_LEVEL", "INFO")},
    "loggers": {"botocore": {"level": "WARNING"}, "pynamodb": {"level": "WARNING"}, "axes": {"level": "WARNING"},
                # The line per request and per relay pass carries the metrics: never silenced by TEMS_LOG_LEVEL.
                "tems.telemetry": {"level": "INFO"},
                # Django's default config gives "django" its own console handler under DEBUG, and the record
                # then reaches root's too: every line twice. Root's handler is the one.
                "django": {"handlers": [], "level": "INFO"},
                "django.request": {"filters": ["refusals_on_one_line"]}},
}
