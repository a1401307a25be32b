"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps every mail it accepts, for tests that follow a mail's
link end to end."""

from __future__ import annotations

import email
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiosmtpd.controller import Controller


class Inbox:
    """Every mail the server accepted, parsed, with its envelope recipients."""

    def __init__(self) -> None:
        self.mails: list[tuple[list[str], email.message.Message]] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        parsed = email.message_from_bytes(envelope.original_content or envelope.content)
        with self.lock:
            self.mails.append((list(envelope.rcpt_tos), parsed))
        return "250 OK"

    def to(self, address: str) -> list[email.message.Message]:
        with self.lock:
            return [mail for recipients, mail in self.mails if address in recipients]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def smtp_inbox() -> Iterator[tuple[Inbox, int]]:
    """An SMTP server on a free port of 127.0.0.1: (its inbox, its port), stopped on exit."""
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


def smtp_mailers(port: int) -> dict:
    """The MAILERS setting that sends through the server on ``port``."""
    return {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                        "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 10}}}
