"""JSON API of the inventory app (staff only; session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from inventory import edits, item_answers, selectors, services
from inventory.errors import InventoryError
from inventory.forms import ItemCreateForm, ItemFieldsForm
from inventory.models import TRACKED_FIELDS, InventoryItem
from tems.api import (
    api_view,
    form_errors,
    if_match_version,
    json_response,
    parse_form,
    parse_json_object,
    with_etag,
)
from tems.audit import actor_of
from tems.idempotency import parse_key
from tems.identity import user_key
from tems.pagination import next_page_url, page_args
from tems.permissions import INVENTORY, teams_within


def _with_etag(response: HttpResponse, item: InventoryItem) -> HttpResponse:
    return with_etag(response, int(item.version))


def _if_match(request: HttpRequest) -> int:
    return if_match_version(request, InventoryError)


@api_view("GET", "POST")
def items(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = parse_form(request, ItemCreateForm, InventoryError, user=request.user)
        item = services.item_create(**form.cleaned_data, actor=request.user.get_username(),
                                    audit_actor=actor_of(request))
        response = json_response(item_answers.item_to_dict(item), status=201)
        response["Location"] = f"/api/inventory/{item.sku}"
        return _with_etag(response, item)
    return json_response({"items": [item_answers.item_to_dict(item) for item in selectors.item_list(
        teams=teams_within(request.user, INVENTORY))]})


@api_view("GET", "PUT", "PATCH")
def item_detail(request: HttpRequest, sku: str) -> HttpResponse:
    if request.method == "PUT":
        return _item_update(request, sku)
    if request.method == "PATCH":
        return _item_patch(request, sku)
    item = selectors.item_get(sku=sku)
    return _with_etag(json_response(item_answers.item_to_dict(item)), item)


def _item_update(request: HttpRequest, sku: str) -> HttpResponse:
    version = _if_match(request)
    form = parse_form(request, ItemFieldsForm, InventoryError)
    item = services.item_update(sku=sku, expected_version=version, actor=request.user.get_username(),
                                audit_actor=actor_of(request), **form.cleaned_data)
    return _with_etag(json_response(item_answers.item_to_dict(item)), item)


def _item_patch(request: HttpRequest, sku: str) -> HttpResponse:
    """Only the fields the client changed, merged onto the latest version unless someone changed them too."""
    version = _if_match(request)
    body = parse_json_object(request)
    unknown = sorted(set(body) - set(TRACKED_FIELDS))
    if unknown or not body:
        raise InventoryError("invalid", f"Send one or more of {', '.join(TRACKED_FIELDS)}, only the fields you "
                                        f"changed; {'unknown: ' + ', '.join(unknown) if unknown else 'got none'}.")
    # Validated by the page's own form: fields not sent are filled with a valid stand-in and their errors ignored.
    stand_in = {"name": "x", "description": "", "quantity": 0, "location": ""}
    form = ItemFieldsForm(data={**stand_in, **body})
    errors = {name: problems for name, problems in form_errors(form).items() if name in body}
    for name, value in body.items():
        expected = int if name == "quantity" else str
        if not isinstance(value, expected) or isinstance(value, bool):
            errors[name] = [f"Must be {'a whole number' if expected is int else 'a string'}."]
    if errors:
        raise InventoryError("invalid", "Invalid fields: " + "; ".join(
            f"{name}: {' '.join(problems)}" for name, problems in errors.items()), errors=errors)
    changes = {name: form.cleaned_data[name] for name in body}
    outcome = edits.item_patch(sku=sku, if_match=version, changes=changes, actor=request.user.get_username(),
                               audit_actor=actor_of(request))
    return _with_etag(json_response(item_answers.item_to_dict(outcome.item)), outcome.item)


@api_view("POST")
def adjustments(request: HttpRequest, sku: str) -> HttpResponse:
    key = parse_key(request.headers.get("Idempotency-Key"))
    body = parse_json_object(request)
    delta, reason = body.get("delta"), body.get("reason", "")
    # JSON true is an int to Python; a count of units is not.
    if not isinstance(delta, int) or isinstance(delta, bool):
        raise InventoryError("invalid", "delta must be a whole number of units, e.g. -2 for 'sold 2'.",
                             errors={"delta": ["Must be a non-zero integer."]})
    if not isinstance(reason, str) or len(reason) > 200:
        raise InventoryError("invalid", "reason must be text of at most 200 characters.",
                             errors={"reason": ["At most 200 characters."]})
    result = services.item_adjust(sku=sku, delta=delta, reason=reason.strip(), actor=request.user.get_username(),
                                  idempotency_key=key, user_id=user_key(request.user), audit_actor=actor_of(request))
    return result.response.to_http(replayed=result.replayed)


@api_view("GET")
def history(request: HttpRequest, sku: str) -> HttpResponse:
    item = selectors.item_get(sku=sku)
    page = selectors.item_history_page(sku=sku, **page_args(request))
    return json_response({"sku": item.sku, "version": int(item.version),
                          "changes": [item_answers.change_to_dict(change) for change in page],
                          "next": next_page_url(request, page)})
