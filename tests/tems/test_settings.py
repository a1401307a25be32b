"""Safe defaults: the settings as a deployment gets them, loaded in a subprocess with a clean environment."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECRET = "a-test-secret-key-that-is-long-enough-and-random-looking-1f9e7c2b5a0d4e8f"
PRODUCTION = {"DJANGO_SECRET_KEY": SECRET, "DJANGO_ALLOWED_HOSTS": "tems.example.org",
              "DJANGO_EMAIL_HOST": "smtp.example.org"}


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    # Only what a bare server would have: nothing from the test run (which sets DJANGO_DEBUG=1) leaks in.
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), **env}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120)


def settings_in(env: dict[str, str], *names: str) -> dict:
    code = ("import json, django; django.setup(); from django.conf import settings as s; "
            f"print(json.dumps({{n: getattr(s, n, None) for n in {list(names)!r}}}, default=str))")
    result = run(["-c", code], {"DJANGO_SETTINGS_MODULE": "tems.settings", **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_check_deploy_passes_with_only_the_three_production_variables():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_a_secret_key_the_app_refuses_to_start():
    result = run(["manage.py", "check"], {"DJANGO_ALLOWED_HOSTS": "tems.example.org"})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in result.stderr


def test_debug_is_off_and_https_is_enforced_by_default():
    values = settings_in(PRODUCTION, "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE",
                         "CSRF_COOKIE_SECURE", "SECURE_CSP")
    assert values["DEBUG"] is False
    assert values["SECURE_SSL_REDIRECT"] is True and values["SECURE_HSTS_SECONDS"] >= 31536000
    assert values["SESSION_COOKIE_SECURE"] is True and values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_CSP"]["script-src"] == ["'self'"]


def test_django_https_0_turns_redirect_hsts_and_secure_cookies_off_together():
    values = settings_in({**PRODUCTION, "DJANGO_HTTPS": "0"}, "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS",
                         "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    assert values == {"DEBUG": False, "SECURE_SSL_REDIRECT": False, "SECURE_HSTS_SECONDS": 0,
                      "SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False}


def test_debug_needs_no_secret_key():
    assert settings_in({"DJANGO_DEBUG": "1"}, "DEBUG")["DEBUG"] is True


def test_proxy_header_and_trusted_origins_come_from_the_environment():
    values = settings_in({**PRODUCTION, "DJANGO_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https",
                          "DJANGO_CSRF_TRUSTED_ORIGINS": "https://tems.example.org,https://events.example.org"},
                         "SECURE_PROXY_SSL_HEADER", "CSRF_TRUSTED_ORIGINS")
    assert values == {"SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
                      "CSRF_TRUSTED_ORIGINS": ["https://tems.example.org", "https://events.example.org"]}


def test_a_malformed_proxy_header_is_a_startup_error():
    result = run(["manage.py", "check"], {**PRODUCTION, "DJANGO_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"})
    assert result.returncode != 0 and "DJANGO_SECURE_PROXY_SSL_HEADER" in result.stderr


@pytest.mark.django_db
def test_pages_carry_a_strict_content_security_policy(client):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "object-src 'none'" in policy
    assert "unsafe-inline" not in policy


@pytest.mark.django_db
def test_health_check_answers_any_host_without_redirect(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST="10.0.3.17")
    assert response.status_code == 200 and response.content == b"ok"
    assert client.get("/accounts/login/", HTTP_HOST="10.0.3.17").status_code == 400


def test_single_sign_on_needs_its_client_and_never_reaches_the_provider_at_start_up():
    issuer = {"TEMS_OIDC_ISSUER": "https://login.uni.invalid"}
    refused = run(["manage.py", "check"], {**PRODUCTION, **issuer, "TEMS_OIDC_CLIENT_ID": "tems"})
    assert refused.returncode != 0 and "TEMS_OIDC_CLIENT_SECRET" in refused.stderr
    # An issuer that resolves nowhere: start-up, URL loading and the deploy checks must not ask it anything.
    started = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                  {**PRODUCTION, **issuer, "TEMS_OIDC_CLIENT_ID": "tems", "TEMS_OIDC_CLIENT_SECRET": "s3cret"})
    assert started.returncode == 0, started.stdout + started.stderr
