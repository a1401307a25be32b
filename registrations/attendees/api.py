"""JSON API of an event's attendee list, for staff (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import attendees, selectors
from tems import audit
from tems.api import api_view, json_response
from tems.audit.wording import ATTENDEES_VIEWED
from tems.pagination import next_page_url, page_args


@api_view("GET")
def attendee_list(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: the event's attendees by name, ``?status=``, ``?q=<username prefix>``, ``?cursor=``."""
    # 404 for an unknown event, not an empty list
    event = selectors.event_get(event_id=event_id, consistent=False)
    page = attendees.attendee_page(event_id=event_id, status=request.GET.get("status"),
                                   search=request.GET.get("q"), **page_args(request))
    # Names read by staff: one audit entry for the request (its own PutItem: nothing else is written).
    audit.record_read(actor=audit.actor_of(request), action=ATTENDEES_VIEWED, team=event.team, event_id=event_id)
    return json_response({"attendees": page.items, "next": next_page_url(request, page)})

