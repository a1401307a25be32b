"""Finding events at 100 and at 10,000 events: does a search or filtered page read the same at both?

One table per size, seeded once with n events as staff would leave them (each with its seat shard and its facets,
``registrations.events.index``): titles from a small vocabulary, so a common word is in one event of twenty at any
size, and one rare word in exactly three events at every size. Every path asks for pages of ``PAGE`` events, so a
page is full at 100 events as at 10,000 and what is compared is the cost of the same request against a bigger
table. One request metered per path (requests, items read, read capacity as DynamoDB Local reports it), p50 of
``CALLS``. Measurements, not tests: nothing here asserts (tests/registrations/test_event_search.py holds the rules).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client

from registrations.events import index
from registrations.events.models import CATEGORIES, Event, EventFacet
from registrations.seating import shards
from registrations.seating.models import SeatShard
from tems.clock import utcnow
from tems.dynamo import TableConfig, boto3_client, configure_models
from tests.bench import scaling
from tests.bench.context import BenchContext

SIZES = (100, 10_000)
PAGE = 5
CALLS = 5
RARE = "quokka"
RARE_EVENTS = (7, 50, 93)  # the same three at every size
TOPICS = ("python", "robotics", "poetry", "chess", "climate", "startup", "yoga", "jazz", "history", "design",
          "physics", "cooking", "film", "running", "law", "music", "theatre", "data", "ethics", "gardening")
KINDS = ("evening", "meetup", "session", "night", "forum")
ORGANIZERS = ("Code Club", "Chess Society", "Film Society", "Careers Service", "Students Union")


def _event(number: int, now) -> Event:
    starts = now + timedelta(hours=1 + number * 8760 / 10_000)  # a year of events at 10,000, the first days at 100
    event_id = f"bench{number:06d}"
    title = f"{TOPICS[number % len(TOPICS)].title()} {KINDS[number % len(KINDS)]} {number}"
    if number in RARE_EVENTS:
        title += f" {RARE}"
    category = CATEGORIES[number % len(CATEGORIES)][0]
    return Event(*Event.key_for(event_id), event_id=event_id, title=title, starts_at=starts, capacity=40,
                 version=1, gsi1sk=Event.listing_key(starts, event_id), location="" if number % 4 == 0 else "Hall",
                 online_url="https://meet.example.org/b" if number % 4 == 0 else None, category=category,
                 organizer=ORGANIZERS[number % len(ORGANIZERS)], public=number % 3 == 0, seat_shards=1, sliced=40)


def seed(n: int) -> None:
    now = utcnow()
    events = [_event(number, now) for number in range(n)]
    with Event.batch_write() as batch:
        for event in events:
            batch.save(event)
    with SeatShard.batch_write() as batch:
        for event in events:
            for shard in shards.new_shards(event_id=event.event_id, capacity=40, starts_at=event.starts_at):
                batch.save(shard)
    with EventFacet.batch_write() as batch:
        for event in events:
            for entry in index.entries_for(event).values():
                batch.save(entry)


def _client(username: str | None) -> Client:
    client = Client()
    if username:
        user, _ = User.objects.get_or_create(username=username)
        client.force_login(user)
    return client


PATHS: dict[str, tuple[str, str | None]] = {
    f"a rare word (?q={RARE})": (f"/api/events?q={RARE}&limit={PAGE}", "bench-student"),
    "a common word (?q=python)": (f"/api/events?q=python&limit={PAGE}", "bench-student"),
    "a category (?category=workshop)": (f"/api/events?category=workshop&limit={PAGE}", "bench-student"),
    "word + category + online + free seats": (
        f"/api/events?q=python&category=talk&mode=online&free=1&limit={PAGE}", "bench-student"),
    "organizer + date range": (f"/api/events?organizer=code+club&from=2000-01-01&to=9000-01-01&limit={PAGE}",
                               "bench-student"),
    "online, in a date range (no word)": (f"/api/events?mode=online&from=2000-01-01&limit={PAGE}", "bench-student"),
    "the page, not logged in (public events)": (f"/events/?limit={PAGE}", None),
    "the page, a word (?q=python)": (f"/events/?q=python&limit={PAGE}", "bench-student"),
}


def _measure(name: str, n: int, call: Callable[[], object]) -> scaling.Row:
    scaling.CALLS, calls = CALLS, scaling.CALLS
    try:
        return scaling.measure(name, n, call)
    finally:
        scaling.CALLS = calls


def measure_all(ctx: BenchContext) -> tuple[list[scaling.Row], dict[int, list[str]]]:
    rows: list[scaling.Row] = []
    rare_found: dict[int, list[str]] = {}
    try:
        for n in SIZES:
            config = scaling._fresh_table(ctx)
            try:
                started = time.monotonic()
                seed(n)
                print(f"  search at {n:,}: seeded in {time.monotonic() - started:.0f} s", flush=True)
                rare_found[n] = [e["title"] for e in _client("bench-student").get(
                    f"/api/events?q={RARE}&limit=20").json()["events"]]
                for name, (url, user) in PATHS.items():
                    client = _client(user)
                    rows.append(_measure(name, n, lambda client=client, url=url: client.get(url)))
            finally:
                boto3_client().delete_table(TableName=config.table_name)
    finally:
        configure_models(TableConfig(ctx.table_name, ctx.endpoint, ctx.region))
    return rows, rare_found


def section(rows: list[scaling.Row], rare_found: dict[int, list[str]]) -> str:
    lines = [
        "## Finding events at 100 and at 10,000 events",
        "",
        f"One table per size, seeded with n events, their seat shards and their facets; pages of {PAGE}; one "
        f"request metered, p50 of {CALLS}. Written by `tests/bench/search.py` (`make bench BENCH_SECTIONS=search`).",
        "",
        "| path | events | requests | items read | RCU | p50 ms |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(f"| {row.path} | {row.n:,} | {row.requests} ({row.operations}) | {row.items_read:,} | "
                     f"{row.rcu:g} | {row.p50_ms:.1f} |")
    lines += ["", f"Is the {SIZES[-1]:,}-event cost within {scaling.BOUND}x of the {SIZES[0]:,}-event cost "
                  "(requests and RCU)?", ""]
    for path in dict.fromkeys(row.path for row in rows):
        lines.append(f"- {path}: {scaling.verdict([row for row in rows if row.path == path])}")
    for n, titles in rare_found.items():
        lines.append(f"\nThe rare word's first page at {n:,} events: {len(titles)} of the {len(RARE_EVENTS)} events "
                     f"whose title has it ({', '.join(titles)}).")
    return "\n".join(lines) + "\n"


def run(ctx: BenchContext) -> str:
    rows, rare_found = measure_all(ctx)
    return section(rows, rare_found)

