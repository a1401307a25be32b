"""The one table of error codes and reasons (docs/API.md) is the set the app answers with, and the other docs
name a refusal as that table does.

The app's side is read from its source: every domain error built with a literal code (``RegistrationError(
"conflict", ..., reason="event_cancelled")``, directly or through a helper that passes its code on), its
``reason`` if any, and every problem+json answer written with a ``code`` of its own (``problem(429, ...,
code="rate_limited")``); the status of a domain error's code is ``tems.errors.STATUS_BY_CODE``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import inventory.errors
import registrations.errors
from registrations.models import OFFERED, WAITLISTED
from tems.errors import STATUS_BY_CODE, DomainError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tems", "registrations", "inventory", "lab")
TABLE = ROOT / "docs" / "API.md"
# A reason that is not a literal, by its expression: the values it can take. A new one fails the test until it
# is named here and in the table.
DYNAMIC_REASONS = {
    # registrations.checkins.services: at the door, a registration that is not confirmed is refused by its status.
    "registration.status": {WAITLISTED, OFFERED},
}


def _error_classes() -> set[str]:
    found, stack = set(), [DomainError]
    while stack:
        cls = stack.pop()
        found.add(cls.__name__)
        stack.extend(cls.__subclasses__())
    return found


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _text(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _constants(tree: ast.Module) -> dict[str, str]:
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name) and _text(node.value) is not None}


def produced() -> tuple[dict[str, int], set[tuple[str, str]]]:
    """{code: status} and {(code, reason)} the app's source answers with."""
    assert registrations.errors.RegistrationError and inventory.errors.InventoryError  # every error class loaded
    classes = _error_classes()
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for package in PACKAGES
             for path in sorted((ROOT / package).rglob("*.py"))}
    # Helpers that build a domain error with the code they are given (``idempotency_error(code, detail)``).
    builders = set(classes)
    for tree in trees.values():
        for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
            parameters = {argument.arg for argument in function.args.args + function.args.kwonlyargs}
            for call in (node for node in ast.walk(function) if isinstance(node, ast.Call)):
                if (_name(call) in classes and call.args and isinstance(call.args[0], ast.Name)
                        and call.args[0].id in parameters):
                    builders.add(function.name)
    codes: dict[str, int] = {}
    reasons: set[tuple[str, str]] = set()
    unread: list[str] = []
    for path, tree in trees.items():
        constants = _constants(tree)
        for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
            name = _name(call)
            if name == "problem" and (code := _text(_keyword(call, "code"))) is not None:
                codes[code] = call.args[0].value
                continue
            if name not in builders or not call.args or (code := _text(call.args[0])) is None:
                continue
            codes[code] = STATUS_BY_CODE[code]
            reason = _keyword(call, "reason")
            if reason is None:
                continue
            if _text(reason) is not None:
                reasons.add((code, reason.value))
            elif isinstance(reason, ast.Name) and reason.id in constants:
                reasons.add((code, constants[reason.id]))
            elif ast.unparse(reason) in DYNAMIC_REASONS:
                reasons.update((code, value) for value in DYNAMIC_REASONS[ast.unparse(reason)])
            else:
                unread.append(f"{path.relative_to(ROOT)}:{call.lineno}: reason={ast.unparse(reason)}")
    assert unread == [], "a reason this test cannot read: name its values in DYNAMIC_REASONS"
    return codes, reasons


def _table(heading: str) -> list[list[str]]:
    """The rows of the table under ``## heading`` in docs/API.md, cells without their backticks."""
    section = TABLE.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip().strip("`") for cell in row] for row in rows[2:]]  # the header and its rule left out


def documented() -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    codes = {row[1]: int(row[0]) for row in _table("Error codes")}
    reasons = {(row[1], row[2]): int(row[0]) for row in _table("Reasons")}
    return codes, reasons


def test_the_table_of_codes_is_the_codes_the_app_answers_with():
    codes, _ = produced()
    assert documented()[0] == codes


def test_every_code_of_a_domain_error_is_answered_somewhere():
    # A code nothing raises is a name without an idea.
    assert set(STATUS_BY_CODE) <= set(produced()[0])


def test_the_table_of_reasons_is_the_reasons_the_app_answers_with():
    _, reasons = produced()
    table = documented()[1]
    assert set(table) == reasons
    assert {pair: STATUS_BY_CODE[pair[0]] for pair in reasons} == table


# --- The other docs -----------------------------------------------------------------------------------------

# "409 `conflict`", "409 `conflict` with reason `event_cancelled`"; and a body's field, `reason: "x"`.
REFUSAL = re.compile(r"\b([45]\d\d) `([a-z_]+)`(?: with reason `([a-z_]+)`)?")
REASON = re.compile(r'`reason: "([a-z_]+)"`')


def refusals_named(text: str) -> tuple[list[tuple[int, str, str | None]], list[str]]:
    return ([(int(status), code, reason or None) for status, code, reason in REFUSAL.findall(text)],
            REASON.findall(text))


def disagreements(text: str) -> list[str]:
    codes, reasons = documented()
    found = []
    statuses, named_reasons = refusals_named(text)
    for status, code, reason in statuses:
        if codes.get(code) != status:
            found.append(f"{status} `{code}`: not a status and code of docs/API.md")
        elif reason is not None and reasons.get((code, reason)) != status:
            found.append(f"{status} `{code}` with reason `{reason}`: not a reason of docs/API.md")
    known = {reason for _, reason in reasons}
    found += [f"reason `{reason}`: not a reason of docs/API.md" for reason in named_reasons if reason not in known]
    return found


def test_other_docs_name_refusals_as_the_table_does():
    docs = [ROOT / "README.md", *sorted(path for path in (ROOT / "docs").glob("*.md") if path != TABLE)]
    wrong = {str(path.relative_to(ROOT)): found for path in docs if (found := disagreements(path.read_text()))}
    assert wrong == {}
    assert sum(len(refusals_named(path.read_text())[0]) for path in docs) >= 5  # the pattern finds them at all


@pytest.mark.parametrize(("text", "wrong"), [
    ("closes (409 `conflict` with reason `event_cancelled`)", []),
    ("a late accept is 409 `offer_expired`", []),
    ("503 `busy` with `Retry-After`", []),
    ("closes (409 `event_cancelled`)", ["409 `event_cancelled`: not a status and code of docs/API.md"]),
    ("the body says 410 `gone`", ["410 `gone`: not a status and code of docs/API.md"]),
    ("400 `conflict`", ["400 `conflict`: not a status and code of docs/API.md"]),
    ("409 `conflict` with reason `sold_out`",
     ["409 `conflict` with reason `sold_out`: not a reason of docs/API.md"]),
    ('409 problem+json, `reason: "event_over"`', ["reason `event_over`: not a reason of docs/API.md"]),
])
def test_a_planted_wrong_refusal_is_caught(text, wrong):
    assert disagreements(text) == wrong
