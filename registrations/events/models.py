"""The event's item and its views (``Event``, ``EventSeats``, ``EventCancellation``), and its finding aids
(``EventFacet``), in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableModel
from tems.text import TextAttribute

# Registrants are reminded a day before, unless staff set another lead time on the event (0 turns it off).
DEFAULT_REMINDER_HOURS = 24


# Two weeks: the longest lead time the event form takes, and so how far ahead the reminder sweep looks.
MAX_REMINDER_HOURS = 336


# Waitlist offers (docs/offers.md): a day to answer unless staff set another window; an hour is
# the least, so a mail read over lunch is still in time; two weeks the most, as for the reminder.
DEFAULT_OFFER_HOURS = 24


MIN_OFFER_HOURS = 1


MAX_OFFER_HOURS = 336


# What an event is about, for the list's filter: a fixed list, so a filter names a set the index holds.
CATEGORIES = (
    ("talk", "Talk"),
    ("workshop", "Workshop"),
    ("social", "Social"),
    ("careers", "Careers"),
    ("sport", "Sport"),
    ("other", "Other"),
)
CATEGORY_LABELS = dict(CATEGORIES)
# A cancellation's reason is a sentence or two for every registrant's mail, not a letter.
MAX_CANCEL_REASON_CHARS = 500


class Event(TableModel):
    """``EVENT#<event_id>`` / ``METADATA``: what staff edit (versioned) plus how its seats are sliced.

    Edits go through ``update()`` with the fields that changed, never ``save()``, so an edit can neither
    clobber the counters nor be applied on top of a version its author did not see.
    """

    METADATA = "METADATA"
    COLLECTION = "EVENTS"

    event_id = UnicodeAttribute()
    # What people typed: shown on every page, so read through TextAttribute (see tems.text).
    title = TextAttribute()
    description = TextAttribute(default="")
    location = TextAttribute(default="")
    starts_at = UTCDateTimeAttribute()
    capacity = NumberAttribute()
    # Seats taken and people waiting are not stored here: the shards and lanes hold them, and
    # ``registrations.seating.shards.seat_counts`` sums them on read.
    # Seat shards (see SeatShard): how many there are and how much of the capacity they hold between them.
    seat_shards = NumberAttribute(null=True)
    sliced = NumberAttribute(null=True)
    # Moved only by the door's transactions (see EventCheckins); absent until the first check-in.
    checked_in_count = NumberAttribute(null=True)
    created_at = UTCDateTimeAttribute(default=utcnow)
    created_by = UnicodeAttribute(default="")
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()
    # Only the lab's scratch events expire: a backstop for when the lab's own clean-up never ran.
    expires_at = TTLAttribute(null=True)
    # Hours before the start at which confirmed registrants are reminded by e-mail (absent: the default; 0: off).
    reminder_hours = NumberAttribute(null=True)
    # Offer mode of the waiting list: a freed seat is offered to the head for this many hours (absent or 0: the
    # head is promoted at once). Read by a cancel through EventSeats, the view its transaction already reads.
    offer_hours = NumberAttribute(null=True)
    # Set when the event is called off (registrations.events.services, ``event_cancel_once``), in the same
    # transaction that copies it onto every seat shard: read only through ``is_cancelled``, the one predicate every
    # "not for a cancelled event" rule asks. Writes that admit someone check it by their own conditions.
    cancelled_at = UTCDateTimeAttribute(null=True)
    cancelled_by = UnicodeAttribute(null=True)
    # Absent: the same as the start (the calendar file then gives it an hour).
    ends_at = UTCDateTimeAttribute(null=True)
    # The zone its times are typed and shown in (absent: the site's, settings.TIME_ZONE).
    time_zone = UnicodeAttribute(null=True)
    map_url = UnicodeAttribute(null=True)
    # Shown to confirmed registrants only (registrations.events.views).
    online_url = UnicodeAttribute(null=True)
    category = UnicodeAttribute(null=True)  # one of CATEGORIES
    # Who runs it, as a name for now (the owning team's, once events belong to teams).
    organizer = TextAttribute(null=True)
    # Listed to visitors who are not logged in (registering still needs an account).
    public = BooleanAttribute(null=True)
    # The registration window, copied onto every seat shard: the seat's own condition enforces it.
    registration_opens_at = UTCDateTimeAttribute(null=True)
    registration_closes_at = UTCDateTimeAttribute(null=True)
    # Why, in staff's words (optional): shown on the event's page and carried by every cancellation notice.
    cancel_reason = TextAttribute(null=True)
    # The organizer team's id (tems.models.Team), set at creation: its members' roles say who may run the event.
    # Absent: only platform admins may (tems.permissions).
    team = UnicodeAttribute(null=True)
    # DRAFT while its team's events need approval and no approver has published it (registrations.approvals);
    # absent once published. A draft lives in the DRAFTS listing and has no finding aids, so no list, search or
    # calendar meets it, and its seat shards carry the draft mark that refuses every registration.
    state = UnicodeAttribute(null=True)
    published_at = UTCDateTimeAttribute(null=True)
    published_by = UnicodeAttribute(null=True)
    # An approver's "send back": why the draft is not published yet, shown to its team until it is.
    sent_back_note = TextAttribute(null=True)
    sent_back_by = UnicodeAttribute(null=True)

    by_start = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", default=COLLECTION)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    DRAFT = "draft"
    # The drafts' own listing by start time: what the approvers' page reads, and no student's list does.
    DRAFTS = "EVENTDRAFTS"
    PK_PREFIX = "EVENT#"
    # Scratch events (the lab's, made for whoever opens it) have ids under this prefix, so no list of a person's
    # registrations shows them. A real event's id is a hex uuid or a seed's name, never under it.
    SCRATCH_PREFIX = "lab-"

    @classmethod
    def pk_for(cls, event_id: str) -> str:
        return cls.PK_PREFIX + event_id

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return cls.pk_for(event_id), cls.METADATA

    @staticmethod
    def listing_key(starts_at: datetime, event_id: str) -> str:
        # ISO-8601 in UTC sorts chronologically as a string; the id breaks ties between simultaneous events.
        return f"{starts_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{event_id}"

    @property
    def is_draft(self) -> bool:
        """Waiting for approval: seen only by its team's staff and its overseeing team's approvers."""
        return self.state == self.DRAFT

    @property
    def is_cancelled(self) -> bool:
        """Whether the event was called off: no reminder goes out for it (registrations.messages.services)."""
        return self.cancelled_at is not None

    @property
    def offers_seats(self) -> bool:
        return bool(self.offer_hours)

    @property
    def reminder_hours_or_default(self) -> int:
        return DEFAULT_REMINDER_HOURS if self.reminder_hours is None else int(self.reminder_hours)

    @property
    def registration_closed(self) -> bool:
        """Registration closes at the start, or at the window's end; only for showing it: the registration's
        condition decides."""
        now = utcnow()
        return self.starts_at <= now or (self.registration_closes_at is not None
                                         and self.registration_closes_at <= now)

    @property
    def registration_not_open_yet(self) -> bool:
        return self.registration_opens_at is not None and self.registration_opens_at > utcnow()

    @property
    def category_label(self) -> str:
        return CATEGORY_LABELS.get(self.category or "", "")

    @property
    def in_person(self) -> bool:
        return bool(self.location)

    @property
    def online(self) -> bool:
        return bool(self.online_url)


class EventSeats(TableModel):
    """The seat counters of the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Registrations move the counters inside their transactions through this view: PynamoDB adds a version
    check and bump to every write of a versioned model, and a registration must neither bump the version
    (that would turn every open edit page stale) nor fail because an edit happened meanwhile.
    """

    ENTITY = None  # a view of another model's item: writes no entity
    capacity = NumberAttribute()
    # Copied onto every seat shard, whose condition closes registration at the start.
    starts_at = UTCDateTimeAttribute(null=True)
    seat_shards = NumberAttribute(null=True)
    sliced = NumberAttribute(null=True)
    # The event's cancellation: a promotion and a registration's cancel write this item under "not cancelled".
    cancelled_at = UTCDateTimeAttribute(null=True)

    offer_hours = NumberAttribute(null=True)  # Event.offer_hours: how a freed seat reaches the waiting list

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


class EventCancellation(TableModel):
    """The cancellation's view of the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    The cancellation writes the event under "not cancelled yet" (so a second one changes nothing) and checks the
    shard count it copied the mark under; an open edit page then learns of it from its own refused
    write (``event_update`` checks ``cancelled_at``), not from a bumped version.
    """

    ENTITY = None  # a view of another model's item: writes no entity
    event_id = UnicodeAttribute()
    title = TextAttribute(null=True)  # the notice's subject
    seat_shards = NumberAttribute(null=True)
    cancelled_at = UTCDateTimeAttribute(null=True)
    cancelled_by = UnicodeAttribute(null=True)
    # What the event's finding aids were written from (``EventFacet.facets_of``), so the cancellation removes
    # them; the version pins them: an edit meanwhile fails the cancellation's condition, which then reads again.
    starts_at = UTCDateTimeAttribute(null=True)
    category = UnicodeAttribute(null=True)
    organizer = TextAttribute(null=True)
    public = BooleanAttribute(null=True)
    version = NumberAttribute(null=True)
    collection = UnicodeAttribute(attr_name="GSI1PK", null=True)  # Event.gsi1pk: only listed events have facets
    cancel_reason = TextAttribute(null=True)
    team = UnicodeAttribute(null=True)  # Event.team: the audit log files the cancellation under it

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


class EventPublication(TableModel):
    """The publication's view of the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Publishing changes nothing staff edit, so it must not turn an open edit page stale; it still checks the
    version it read, because the finding aids it writes are built from that version.
    """

    ENTITY = None  # a view of another model's item: writes no entity
    event_id = UnicodeAttribute()
    state = UnicodeAttribute(null=True)
    published_at = UTCDateTimeAttribute(null=True)
    published_by = UnicodeAttribute(null=True)
    sent_back_note = TextAttribute(null=True)
    sent_back_by = UnicodeAttribute(null=True)
    seat_shards = NumberAttribute(null=True)
    cancelled_at = UTCDateTimeAttribute(null=True)
    version = NumberAttribute(null=True)
    collection = UnicodeAttribute(attr_name="GSI1PK", null=True)

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


class EventFacet(TableModel):
    """``EVENT#<event_id>`` / ``FACET#<facet>``: one way to find an event, listed in GSI1 under
    ``EVENTFACET#<facet>`` by start time (``Event.listing_key``).

    A facet is a word of the title, the category, the organizer, or "public". The event's create, edit and
    cancellation write and remove its facets in their own transaction (registrations.events.index), so a search
    reads one facet's list a page at a time (Query + Limit) and never meets an event that is not so. Each entry
    carries what the other filters ask, so combining them filters the entries read, never reads more lists.
    """

    SK_PREFIX = "FACET#"
    LIST_PREFIX = "EVENTFACET#"
    PUBLIC = "public"

    event_id = UnicodeAttribute()
    facet = UnicodeAttribute()
    starts_at = UTCDateTimeAttribute()
    category = UnicodeAttribute(null=True)
    organizer = UnicodeAttribute(null=True)  # ``organizer_key`` of the event's organizer
    public = BooleanAttribute(default=False)
    online = BooleanAttribute(default=False)
    in_person = BooleanAttribute(default=False)
    words = ListAttribute(of=UnicodeAttribute, default=list)

    listing = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK")
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    @classmethod
    def key_for(cls, event_id: str, facet: str) -> tuple[str, str]:
        return Event.pk_for(event_id), cls.SK_PREFIX + facet

    @classmethod
    def list_pk_for(cls, facet: str) -> str:
        return cls.LIST_PREFIX + facet

    @staticmethod
    def word(token: str) -> str:
        return f"word:{token}"

    @staticmethod
    def of_category(category: str) -> str:
        return f"category:{category}"

    @staticmethod
    def of_organizer(organizer_key: str) -> str:
        return f"organizer:{organizer_key}"
