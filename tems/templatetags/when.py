"""Dates and times as pages show them: one format everywhere, 24-hour, with the zone named."""

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.timesince import timesince

register = template.Library()

# "Sat 12 Dec 2026, 18:00 CET": the weekday guards against a misread date, and the zone's name says which 18:00
# it is (students abroad, a calendar in another zone).
MOMENT_FORMAT = "D j M Y, H:i T"


def when_text(moment: datetime | str | None) -> str:
    """``moment`` (aware, or an ISO 8601 string as the serializers write it) in the site's time zone."""
    if not moment:
        return ""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return date_format(timezone.localtime(moment), MOMENT_FORMAT)


@register.filter
def when(moment: datetime | str | None) -> str:
    return when_text(moment)


@register.filter
def ago(moment: datetime | None) -> str:
    """'just now' under a minute (timesince alone says '0 minutes'), else '5 minutes ago'."""
    if not moment:
        return ""
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"
