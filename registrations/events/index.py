"""The event's finding aids (``EventFacet``): which facets an event has, and their writes inside the event's own
create, edit and cancellation transactions.

An event has at most ``MAX_FACETS`` of them: ``MAX_WORDS`` words of its title, its category, its organizer and
"public". The bound is what keeps the event's transactions within DynamoDB's 100 items: a creation holds the
event, up to 80 seat shards, the queue, the gate and the tap's record (84) plus its facets; an edit of an event
whose start moved rewrites each facet and may delete as many old words (80 shards, the gate, the event and the
outbox message: 83, plus 9 puts and 6 deletes).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from registrations.events.models import Event, EventFacet
from tems.transactions import LabelledTransaction

MAX_WORDS = 6
MAX_FACETS = MAX_WORDS + 3
# Words are looked up whole; a longer one is cut, the same way when it is indexed and when it is searched for.
MAX_WORD_CHARS = 24
MAX_ORGANIZER_CHARS = 100
# Words that would put most events in one list and find nothing in particular.
STOPWORDS = frozenset(
    "a an and are as at be by for from how in into is it of on or our the this to with your you".split())
_WORD = re.compile(r"[^\W_]+")


def _folded(text: str) -> str:
    """Lower case without accents, so "Café" and "cafe" are one word."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def words_of(text: str, *, limit: int = MAX_WORDS) -> list[str]:
    """The words of ``text`` a search looks up: folded, in order, without repeats, stopwords or single letters."""
    found: list[str] = []
    for match in _WORD.finditer(_folded(text or "")):
        word = match.group()[:MAX_WORD_CHARS]
        if len(word) < 2 or word in STOPWORDS or word in found:
            continue
        found.append(word)
        if len(found) == limit:
            break
    return found


def organizer_key(name: str | None) -> str:
    """One spelling of an organizer's name for its list: folded, spaces collapsed."""
    return " ".join(_folded(name or "").split())[:MAX_ORGANIZER_CHARS]


def facets_of(*, title: str, category: str | None, organizer: str | None, public: bool | None) -> list[str]:
    facets = [EventFacet.word(word) for word in words_of(title)]
    if category:
        facets.append(EventFacet.of_category(category))
    if organizer_key(organizer):
        facets.append(EventFacet.of_organizer(organizer_key(organizer)))
    if public:
        facets.append(EventFacet.PUBLIC)
    return facets


def entries_for(event: Event) -> dict[str, EventFacet]:
    """The event's facet entries, by facet, each carrying what the other filters ask."""
    shared: dict[str, Any] = {
        "event_id": event.event_id, "starts_at": event.starts_at, "category": event.category or None,
        "organizer": organizer_key(event.organizer) or None, "public": bool(event.public),
        "online": bool(event.online_url), "in_person": bool(event.location),
        "words": words_of(event.title), "gsi1sk": Event.listing_key(event.starts_at, event.event_id),
    }
    facets = facets_of(title=event.title, category=event.category, organizer=event.organizer, public=event.public)
    return {facet: EventFacet(*EventFacet.key_for(event.event_id, facet), facet=facet,
                              gsi1pk=EventFacet.list_pk_for(facet), **shared) for facet in facets}


def _label(index: int) -> str:
    return f"facet_{index}"


def add_facets(transaction: LabelledTransaction, event: Event) -> None:
    """A new event's facets, in its creating transaction."""
    for index, entry in enumerate(entries_for(event).values()):
        transaction.save(_label(index), entry)


def replace_facets(transaction: LabelledTransaction, *, stored: Event, edited: Event) -> None:
    """An edit's changes to the facets: the ones ``edited`` no longer has deleted, the new or changed ones put.

    ``stored`` is the event as read before the edit; the edit's version condition makes it the one replaced."""
    old, new = entries_for(stored), entries_for(edited)
    index = 0
    for facet in sorted(set(old) - set(new)):
        transaction.delete(_label(index), EventFacet(*EventFacet.key_for(stored.event_id, facet)))
        index += 1
    for facet, entry in new.items():
        if facet in old and _same(old[facet], entry):
            continue
        transaction.save(_label(index), entry)
        index += 1


def remove_facets(transaction: LabelledTransaction, *, event_id: str, facets: Iterable[str]) -> None:
    """The cancellation removes the event's facets: a cancelled event is found on its page, not by a search."""
    for index, facet in enumerate(facets):
        transaction.delete(_label(index), EventFacet(*EventFacet.key_for(event_id, facet)))


def _same(left: EventFacet, right: EventFacet) -> bool:
    return left.serialize() == right.serialize()
