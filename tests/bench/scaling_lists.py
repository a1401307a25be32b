"""Scaling paths of the paginated lists (issue 10): the event list and an item's history, seeded with n items."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client

from inventory import services as inventory_services
from inventory.models import InventoryChange, InventoryItem
from registrations.events.models import Event
from tems.clock import utcnow
from tems.dynamo import boto3_client, current_config

SKU = "BENCH-KIT"


# Every size asks for pages of the same length, so the 10-event table fills two pages as the larger ones do:
# what is compared is the cost of the same request against a bigger table, not a half-empty page against a full
# one (with the default 20, the 10-event request reads 10 events and looks cheaper for that reason alone).
PAGE = 5

def _client(username: str, *, staff: bool = False) -> Client:
    user, _ = User.objects.get_or_create(username=username, defaults={"is_staff": staff})
    client = Client()
    client.force_login(user)
    return client


def _seed_events(n: int) -> None:
    """n upcoming events and as many past ones: the past half must cost the upcoming list nothing."""
    now = utcnow()
    with Event.batch_write() as batch:
        for number in range(n):
            for sign in (1, -1):
                starts = now + sign * timedelta(days=1, minutes=number)
                event_id = f"bench{'-' if sign < 0 else ''}{number:06d}"
                batch.save(Event(*Event.key_for(event_id), event_id=event_id, title=f"Bench event {number}",
                                 location="Main hall", description="A seeded event of the scaling benchmark.",
                                 starts_at=starts, capacity=100, version=1,
                                 gsi1sk=Event.listing_key(starts, event_id)))


def event_list_first_page(n: int) -> Callable[[], object]:
    _seed_events(n)
    client = _client("bench-student")
    return lambda: client.get(f"/api/events?limit={PAGE}")


def event_list_later_page(n: int) -> Callable[[], object]:
    """A page from the middle of the list, reached by following ``next`` as a client would."""
    _seed_events(n)
    client = _client("bench-student")
    url, seen = f"/api/events?limit={PAGE}", 0
    while seen < n // 2:
        body = client.get(url).json()
        seen += len(body["events"])
        if body["next"] is None:
            break
        url = body["next"]
    return lambda: client.get(url)


def event_list_page(n: int) -> Callable[[], object]:
    _seed_events(n)
    client = _client("bench-student")
    return lambda: client.get(f"/events/?limit={PAGE}")


def _seed_history(n: int) -> None:
    inventory_services.item_create(sku=SKU, name="Lab kit", quantity=0, actor="bench")
    with InventoryChange.batch_write() as batch:
        for version in range(2, n + 1):
            batch.save(InventoryChange(*InventoryChange.key_for(SKU, version), sku=SKU, version=version,
                                       kind=InventoryChange.ADJUST, changed_by="bench", reason="delivery",
                                       delta=1, before={"quantity": version - 2}, after={"quantity": version - 1}))
    # The item's version must match its history (PynamoDB would bump a versioned item's version itself).
    pk, sk = InventoryItem.key_for(SKU)
    boto3_client().update_item(
        TableName=current_config().table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}},
        UpdateExpression="SET version = :v, quantity = :q",
        ExpressionAttributeValues={":v": {"N": str(n)}, ":q": {"N": str(n - 1)}})


def item_history_api(n: int) -> Callable[[], object]:
    _seed_history(n)
    client = _client("bench-staff", staff=True)
    return lambda: client.get(f"/api/inventory/{SKU}/history")


def item_history_page(n: int) -> Callable[[], object]:
    _seed_history(n)
    client = _client("bench-staff", staff=True)
    return lambda: client.get(f"/inventory/{SKU}/history/")


PATHS: dict[str, Callable[[int], Callable[[], object]]] = {
    "GET /api/events (first page)": event_list_first_page,
    "GET /api/events (page in the middle)": event_list_later_page,
    "GET /events/ (page)": event_list_page,
    "GET /api/inventory/<sku>/history": item_history_api,
    "GET /inventory/<sku>/history/ (page)": item_history_page,
}
