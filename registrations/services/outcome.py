"""What a registration request answered, and the id a new registration gets (kept apart from the round loop in
``services.create`` so that module holds the rounds and their transactions alone)."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from tems.idempotency import StoredResponse

__all__ = ["RegistrationOutcome", "new_registration_id"]


@dataclass(frozen=True)
class RegistrationOutcome:
    """What ``registration_create`` answered: the response to send and how it came about."""

    response: StoredResponse
    kind: str  # "created" | "already_registered" | "replayed"

    @property
    def replayed(self) -> bool:
        return self.kind == "replayed"

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.response.body)


def new_registration_id() -> str:
    # 32 hex digits as before, but the first 12 are the creation time in milliseconds: the student's list is
    # then in key order newest first, so it can be paged by one Query instead of read whole and sorted.
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"
