from django.conf import settings
from django.http import HttpRequest


def demo(request: HttpRequest) -> dict:
    return {"TEMS_DEMO": settings.TEMS_DEMO}
