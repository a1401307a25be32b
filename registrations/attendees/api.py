"""JSON API of an event's attendee list, for staff (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import attendees, selectors
from tems.api import api_view, json_response
from tems.pagination import next_page_url, page_args


@api_view("GET", staff=True)
def attendee_list(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: the event's attendees by name, ``?status=``, ``?q=<username prefix>``, ``?cursor=``."""
    # 404 for an unknown event, not an empty list
    selectors.event_get(event_id=event_id, consistent=False)
    page = attendees.attendee_page(event_id=event_id, status=request.GET.get("status"),
                                   search=request.GET.get("q"), **page_args(request))
    return json_response({"attendees": page.items, "next": next_page_url(request, page)})

