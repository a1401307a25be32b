"""Settings of the gunicorn that ``make bench`` starts: TEMS's own, plus the floor view's URL."""

from tems.settings import *  # noqa: F403

ROOT_URLCONF = "tests.bench.site"
