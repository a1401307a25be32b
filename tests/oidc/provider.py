"""Start the test OpenID Connect provider (``idp.mjs``) and log in at it as a browser would.

The provider is a real one (panva's ``oidc-provider``, installed by ``npm ci``), so the log-in under test runs
the whole code flow: discovery, the authorization redirect, the provider's own log-in form, the token exchange
and the ID token's signature check against the provider's published keys.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import requests

SCRIPT = Path(__file__).with_name("idp.mjs")
PACKAGE = Path(__file__).resolve().parents[2] / "node_modules" / "oidc-provider"
START_TIMEOUT_SECONDS = 30.0


class LocalIdP:
    """One provider process with one confidential client; a context manager yielding itself.

    ``accounts`` maps a subject to its claims (e-mail, ``email_verified``, ``preferred_username``, ...); any other
    login name is a subject with a verified ``<sub>@idp.test``.
    """

    def __init__(self, *, redirect_uris: list[str], post_logout_redirect_uris: list[str] = (),
                 accounts: dict[str, dict] | None = None, client_id: str = "tems-test",
                 client_secret: str = "tems-test-secret"):
        self.redirect_uris = redirect_uris
        self.post_logout_redirect_uris = list(post_logout_redirect_uris)
        self.accounts = accounts or {}
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = ""
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> LocalIdP:
        node = shutil.which("node")
        if node is None or not PACKAGE.exists():
            raise RuntimeError("The OIDC tests need Node.js and the npm package oidc-provider: run `npm ci`.")
        env = {**os.environ, "OIDC_TEST_CLIENT_ID": self.client_id, "OIDC_TEST_CLIENT_SECRET": self.client_secret,
               "OIDC_TEST_REDIRECT_URIS": json.dumps(self.redirect_uris),
               "OIDC_TEST_POST_LOGOUT_REDIRECT_URIS": json.dumps(self.post_logout_redirect_uris),
               "OIDC_TEST_ACCOUNTS": json.dumps(self.accounts)}
        self._process = subprocess.Popen([node, str(SCRIPT)], env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
        first_line: list[str] = []
        reader = threading.Thread(target=lambda: first_line.append(self._process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_SECONDS)
        if not first_line or not first_line[0].startswith("http://127.0.0.1:"):
            self.__exit__(None, None, None)
            raise RuntimeError("the test OpenID Connect provider did not start")
        self.issuer = first_line[0].strip()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
            self._process = None

    def log_in(self, authorization_url: str, *, subject: str) -> str:
        """Follow ``authorization_url`` through the provider's log-in form as ``subject``; returns the URL the
        provider finally redirects to (the relying party's callback with ``code`` and ``state``)."""
        browser = requests.Session()
        response = browser.get(authorization_url, allow_redirects=False, timeout=10)
        while response.is_redirect and response.headers["Location"].startswith(("/", self.issuer)):
            response = browser.get(urljoin(response.url, response.headers["Location"]), allow_redirects=False,
                                   timeout=10)
        if response.is_redirect:  # no log-in asked: the provider remembers this browser
            return response.headers["Location"]
        form = _LoginForm()
        form.feed(response.text)
        response = browser.post(urljoin(response.url, form.action), data={
            "prompt": "login", "login": subject, "password": "any"}, allow_redirects=False, timeout=10)
        while response.is_redirect and response.headers["Location"].startswith(("/", self.issuer)):
            response = browser.get(urljoin(response.url, response.headers["Location"]), allow_redirects=False,
                                   timeout=10)
        if not response.is_redirect:
            raise AssertionError(f"the provider did not redirect back: {response.status_code} {response.text[:300]}")
        return response.headers["Location"]

    def log_out(self, end_session_url: str) -> str:
        """Open the relying party's log-out URL at the provider and submit its confirmation form (which a
        browser submits by script); returns where the provider sends the browser back to."""
        browser = requests.Session()
        response = browser.get(end_session_url, allow_redirects=False, timeout=10)
        if response.status_code != 200:
            raise AssertionError(f"the provider refused the log-out: {response.status_code} {response.text[:300]}")
        form = _LoginForm()
        form.feed(response.text)
        response = browser.post(urljoin(response.url, form.action), data=form.fields, allow_redirects=False,
                                timeout=10)
        if not response.is_redirect:
            raise AssertionError(f"the provider did not redirect back: {response.status_code} {response.text[:300]}")
        return response.headers["Location"]


class _LoginForm(HTMLParser):
    """The first form's action and its hidden fields."""

    def __init__(self):
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}
        self._done = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form" and not self.action:
            self.action = attributes.get("action", "")
        elif tag == "input" and not self._done and attributes.get("type") == "hidden":
            self.fields[attributes.get("name", "")] = attributes.get("value", "")

    def handle_endtag(self, tag):
        if tag == "form":
            self._done = True
