"""The load balancer's health check: answered before host validation and the HTTPS redirect.

A balancer probes each instance by its private address over plain HTTP, so the probe fails ALLOWED_HOSTS and
would be redirected to HTTPS; neither says anything about whether the process can serve. It touches no database:
a DynamoDB hiccup must not take every instance out of the balancer at once.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEALTH_PATH = "/healthz"


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == HEALTH_PATH and request.method in {"GET", "HEAD"}:
            return HttpResponse("ok", content_type="text/plain")
        return self.get_response(request)
