from datetime import timedelta

from django.utils import timezone

from tems.templatetags.when import ago


def test_under_a_minute_is_just_now_not_zero_minutes():
    assert ago(timezone.now() - timedelta(seconds=20)) == "just now"


def test_older_says_how_long_ago():
    assert ago(timezone.now() - timedelta(minutes=5, seconds=3)) == "5\xa0minutes ago"


def test_nothing_measured_says_nothing():
    assert ago(None) == ""
