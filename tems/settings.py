"""TEMS settings. Every knob is read from the environment here, and only here, with safe local defaults."""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DJANGO_DEBUG", True)
# The fallback key is only for local development; production must set DJANGO_SECRET_KEY.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "tems-insecure-local-development-key-change-me")
if not DEBUG and SECRET_KEY.startswith("tems-insecure"):
    raise RuntimeError("Set DJANGO_SECRET_KEY when DJANGO_DEBUG is off.")
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

# Demo mode opens the lab to everyone and shows the demo log-ins on the log-in page.
TEMS_DEMO = _env_bool("TEMS_DEMO", False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "tems",
    "registrations",
    "inventory",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

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
    "CheckInRecorded": "registrations.checkins.notifications.checkin_recorded",
    "CheckInUndone": "registrations.checkins.notifications.checkin_undone",
}
# Without DJANGO_EMAIL_HOST, mails are printed where `make run` runs; with it, they go out over SMTP.
_email_host = os.environ.get("DJANGO_EMAIL_HOST")
MAILERS = {
    "default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": _email_host, "port": int(os.environ.get("DJANGO_EMAIL_PORT", "25"))}}
    if _email_host else {"BACKEND": "django.core.mail.backends.console.EmailBackend"},
}
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "TEMS <events@tems.invalid>")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("TEMS_LOG_LEVEL", "INFO")},
    "loggers": {"botocore": {"level": "WARNING"}, "pynamodb": {"level": "WARNING"}},
}
