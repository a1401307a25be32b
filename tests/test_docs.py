"""A reference to a section of a document names a heading that document has.

Docs and code point readers at sections: ``docs/registrations.md, "Seat shards"``, ``docs/DEPLOY.md, section 5``,
``"Registration against its floor" in docs/PERFORMANCE.md`` or ``docs/ARCHITECTURE.md#logs-and-metrics``. A
heading renamed or a section merged leaves such a reference pointing at nothing; this finds them all (in the
docs, the README and the Python and templates of every package) and checks each against the headings of its file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("tems", "registrations", "inventory", "lab", "tests")

_PATH = r"(?P<path>(?:docs/[\w./-]+|README)\.md)"
# A heading's name starts with a letter or digit (what follows a path and a string's closing quote in code does not).
_NAME = r"[\"“](?P<name>\w[^\"”]{0,119})[\"”]"
# Between a path and its section: a comma or colon, a line break (a comment's or docstring's, with its marker),
# an opening parenthesis.
_GAP = r"[,:]?[ \t]*(?:\n[ \t]*(?:#|\*|//)?[ \t]*)?\(?"
_AFTER = re.compile(_PATH + r"(?:#(?P<anchor>[\w-]+)|" + _GAP + r"(?:" + _NAME + r"|section (?P<number>\d+)\b))")
_BEFORE = re.compile(_NAME + r"[ \t]+in[ \t]+" + _PATH)
_HEADING = re.compile(r"#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$")


@dataclass(frozen=True)
class Reference:
    path: str  # as written, from the project's root
    section: str  # a heading's name, "#anchor" or "section N"
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.path} {self.section}"


def references(text: str) -> list[Reference]:
    """Every reference in ``text`` to a named section of a Markdown file of the project."""
    found = []
    for pattern in (_AFTER, _BEFORE):
        for match in pattern.finditer(text):
            groups = match.groupdict()
            if groups.get("anchor"):
                section = "#" + groups["anchor"]
            elif groups.get("number"):
                section = f"section {groups['number']}"
            else:
                # A name wrapped over two lines (of a comment, too) is one name.
                section = '"' + re.sub(r"\s*\n\s*(?:#\s*)?", " ", groups["name"]) + '"'
            found.append((match.start(), Reference(match.group("path"), section,
                                                   text.count("\n", 0, match.start()) + 1)))
    return [reference for _, reference in sorted(found, key=lambda pair: pair[0])]


def headings(markdown: str) -> list[str]:
    """The ATX headings of a Markdown text, code blocks left out."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.fullmatch(line)
        if match:
            found.append(match.group(1))
    return found


def _plain(text: str) -> str:
    return re.sub(r"[`*_]", "", text).strip().casefold()


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def resolves(reference: Reference, markdown: str) -> bool:
    """Whether ``reference`` names a heading of ``markdown``: the heading itself, or the part before its colon or
    parenthesis (``"Seat shards"`` for "Seat shards: how many"), or its number, or its anchor."""
    titles = headings(markdown)
    if reference.section.startswith("#"):
        return reference.section[1:] in {anchor(title) for title in titles}
    if reference.section.startswith("section "):
        number = reference.section.removeprefix("section ")
        return any(re.match(rf"{number}\.\s", title) for title in titles)
    name = _plain(reference.section.strip('"'))
    return any(title == name or title.startswith((name + ":", name + " (")) for title in map(_plain, titles))


def _scanned_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "templates").rglob("*.html"))]
    for package in SOURCES:
        files += sorted((ROOT / package).rglob("*.py"))
    return [file for file in files if file != Path(__file__).resolve()]


def _broken(file: Path) -> list[str]:
    broken = []
    for reference in references(file.read_text(encoding="utf-8")):
        target = ROOT / reference.path
        if not target.is_file():
            broken.append(f"{reference} (no such file)")
        elif not resolves(reference, target.read_text(encoding="utf-8")):
            broken.append(f"{reference} (no such heading)")
    return broken


def test_every_section_reference_names_a_heading_of_its_file():
    broken = {str(file.relative_to(ROOT)): found for file in _scanned_files() if (found := _broken(file))}
    assert broken == {}


def test_the_project_has_section_references_to_check():
    # A pattern that matched nothing would pass the test above for every project.
    assert sum(len(references(file.read_text(encoding="utf-8"))) for file in _scanned_files()) >= 20


# --- The finder itself, on a sample --------------------------------------------------------------------------

SAMPLE_DOC = """# Guide

## Seat shards: how many and where

```
# Not a heading (a shell comment in a code block)
```

## 5. Install, migrate, collect
## Logs and metrics
"""

SAMPLE_CODE = '''
# Shards fill unevenly (docs/guide.md, "Seat shards"), logged as in docs/guide.md#logs-and-metrics.
def f():
    """Installed as in docs/guide.md, section 5; see docs/guide.md ("The last seats") and
    docs/guide.md,
    "Not a heading". "Logs and metrics" in docs/guide.md, docs/guide.md#no-such-anchor, docs/guide.md, section 9,
    and docs/other.md, "Anything".
    """
    return f"docs/guide.md")  # a string ending with a path, then code: no reference

# Wrapped (docs/guide.md, "Logs and
# metrics").
'''


def test_the_finder_sees_every_form_of_reference():
    assert [(r.path, r.section, r.line) for r in references(SAMPLE_CODE)] == [
        ("docs/guide.md", '"Seat shards"', 2),
        ("docs/guide.md", "#logs-and-metrics", 2),
        ("docs/guide.md", "section 5", 4),
        ("docs/guide.md", '"The last seats"', 4),
        ("docs/guide.md", '"Not a heading"', 5),
        ("docs/guide.md", '"Logs and metrics"', 6),
        ("docs/guide.md", "#no-such-anchor", 6),
        ("docs/guide.md", "section 9", 6),
        ("docs/other.md", '"Anything"', 7),
        ("docs/guide.md", '"Logs and metrics"', 11),
    ]


@pytest.mark.parametrize(("section", "expected"), [
    ('"Seat shards"', True),
    ('"Seat shards: how many and where"', True),
    ('"seat shards"', True),
    ('"Seat"', False),
    ('"The last seats"', False),
    ('"Not a heading"', False),
    ('"Logs and metrics"', True),
    ("#logs-and-metrics", True),
    ("#seat-shards-how-many-and-where", True),
    ("#no-such-anchor", False),
    ("section 5", True),
    ("section 9", False),
])
def test_a_planted_broken_reference_is_caught(section, expected):
    assert resolves(Reference("docs/guide.md", section, 1), SAMPLE_DOC) is expected
