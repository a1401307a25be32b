from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from tems.api import problem
from tems.forms import SignUpForm


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if request.path.startswith("/api/"):
        return problem(403, f"CSRF check failed ({reason}). Send the csrftoken cookie's value in X-CSRFToken.")
    return render(request, "403_csrf.html", {"reason": reason}, status=403)


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("registrations:event_list")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        return redirect("registrations:event_list")
    return render(request, "registration/signup.html", {"form": form})
