"""Pages of the inventory app (staff only): thin, they parse input, call one service and render."""

import uuid
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from inventory import edits, selectors, services
from inventory.errors import InventoryError
from inventory.forms import AdjustmentForm, ItemCreateForm, ItemEditForm, StockImportForm
from inventory.models import TRACKED_FIELDS
from tems.audit import actor_of
from tems.errors import DomainError
from tems.forms import add_error_to_form
from tems.http import after_save, conflict_status
from tems.idempotency import FORM_FIELD, key_from_request
from tems.identity import user_key
from tems.merge import conflict_panel, load_base, sign_base
from tems.pagination import next_page_url, page_args
from tems.permissions import INVENTORY, teams_within

HISTORY_ON_DETAIL = 50


def _item_or_404(sku: str):
    try:
        return selectors.item_get(sku=sku)
    except InventoryError as error:
        raise Http404(error.detail) from None


@require_GET
@login_required
def item_list(request: HttpRequest) -> HttpResponse:
    return render(request, "inventory/item_list.html",
                  {"items": selectors.item_list(teams=teams_within(request.user, INVENTORY))})


@require_http_methods(["GET", "POST"])
@login_required
def item_create(request: HttpRequest) -> HttpResponse:
    form = ItemCreateForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            item = services.item_create(**form.cleaned_data, actor=request.user.get_username(),
                                        audit_actor=actor_of(request))
        except InventoryError as error:
            if error.code == "conflict":
                form.add_error("sku", f"{form.cleaned_data['sku']} is taken: choose another SKU.")
            else:
                add_error_to_form(form, error)
        else:
            messages.success(request, f"Created {item.sku} ({item.name}).")
            return redirect("inventory:item_detail", sku=item.sku)
    return render(request, "inventory/item_create.html", {"form": form})


def _detail_context(item, *, adjust_form=None, adjust_error=None) -> dict:
    return {
        "item": item,
        "history": selectors.item_history(sku=item.sku, limit=HISTORY_ON_DETAIL),
        "adjust_form": adjust_form or AdjustmentForm(),
        "adjust_error": adjust_error,
        # A fresh key per render: a double click or a network retry of this form is one adjustment.
        "idempotency_key": uuid.uuid4(),
        "idempotency_field": FORM_FIELD,
    }


# never_cache: the page holds a one-tap idempotency key; going Back to a cached copy and submitting a new
# adjustment would resend a used key and be answered as a repeat instead of applied.
@never_cache
@require_GET
@login_required
def item_detail(request: HttpRequest, sku: str) -> HttpResponse:
    return render(request, "inventory/item_detail.html", _detail_context(_item_or_404(sku)))


@require_GET
@login_required
def item_history(request: HttpRequest, sku: str) -> HttpResponse:
    item = _item_or_404(sku)
    try:
        page = selectors.item_history_page(sku=sku, **page_args(request))
    except DomainError as error:
        return render(request, "inventory/item_history.html", {"item": item, "history": [], "error": error.detail},
                      status=400)
    template = "inventory/item_history.html#history-page" if request.htmx else "inventory/item_history.html"
    return render(request, template, {"item": item, "history": page.items, "next_url": next_page_url(request, page),
                                      "continued": bool(request.GET.get("cursor"))})


@never_cache
@require_POST
@login_required
def item_adjust(request: HttpRequest, sku: str) -> HttpResponse:
    template = "inventory/item_detail.html#stock" if request.htmx else "inventory/item_detail.html"
    form = AdjustmentForm(request.POST)
    error = None
    status = 400
    if form.is_valid():
        try:
            key = key_from_request(request)
            result = services.item_adjust(sku=sku, delta=form.delta, reason=form.cleaned_data["reason"],
                                          actor=request.user.get_username(), idempotency_key=key,
                                          user_id=user_key(request.user), audit_actor=actor_of(request))
        except DomainError as refusal:  # InventoryError, or a bad/reused idempotency key
            if refusal.code == "not_found":
                raise Http404(refusal.detail) from None
            error, status = refusal.detail, refusal.status
        else:
            verb = "Removed" if form.delta < 0 else "Added"
            note = " (already applied: this was a repeat of the same tap)" if result.replayed else ""
            message = f"{verb} {abs(form.delta)}: {result.quantity} in stock now{note}."
            if not request.htmx:
                messages.success(request, message)
                return redirect("inventory:item_detail", sku=sku)
            context = _detail_context(_item_or_404(sku))
            context["adjust_done"] = message
            return render(request, template, context)
    context = _detail_context(_item_or_404(sku), adjust_form=form, adjust_error=error)
    # htmx swaps only 2xx answers, so a refusal travels as 200 to it and with its real status otherwise.
    return render(request, template, context, status=200 if request.htmx else status)


LABELS = {"name": "Name", "description": "Description", "quantity": "In stock", "location": "Location"}


def _edit_initial(sku: str, values: dict, version: int) -> dict:
    return {**values, "version": version, "base": sign_base(values, scope=_base_scope(sku, version))}


def _base_scope(sku: str, version: int) -> str:
    return f"item:{sku}:v{version}"


@require_http_methods(["GET", "POST"])
@login_required
def item_edit(request: HttpRequest, sku: str) -> HttpResponse:
    template = "inventory/item_edit.html#edit-region" if request.htmx else "inventory/item_edit.html"
    if request.method == "GET":
        item = _item_or_404(sku)
        form = ItemEditForm(initial=_edit_initial(sku, item.snapshot(), int(item.version)))
        return render(request, template, {"form": form, "item": item})

    form = ItemEditForm(request.POST)
    conflict = None
    if form.is_valid():
        mine = {name: form.cleaned_data[name] for name in TRACKED_FIELDS}
        version = form.cleaned_data["version"]
        base = load_base(form.cleaned_data["base"], scope=_base_scope(sku, version), fields=TRACKED_FIELDS)
        try:
            saved = edits.item_edit(sku=sku, expected_version=version, base=base, mine=mine,
                                    actor=request.user.get_username(), audit_actor=actor_of(request))
        except InventoryError as error:
            if error.code == "not_found":
                raise Http404(error.detail) from None
            if error.code != "precondition_failed":
                add_error_to_form(form, error)  # 'invalid' or 'busy': said on the form, never a 500
                return render(request, template, {"form": form, "item": _item_or_404(sku)},
                              status=200 if request.htmx else error.status)
            conflict = _conflict(request, sku, error, mine)
            # Nothing is written until they decide: the form holds the merge (their fields, mine where only I
            # changed, mine where both did) and is now based on the stored version.
            current, at = error.extra["current"], int(error.extra["current"]["version"])
            theirs = {name: current[name] for name in TRACKED_FIELDS}
            form = ItemEditForm(initial={**_edit_initial(sku, theirs, at), **error.extra["merge"].values})
        else:
            note = f" Kept the changes {saved.merged_with} made meanwhile." if saved.merge else ""
            messages.success(request, f"Saved.{note}")
            return after_save(request, reverse("inventory:item_detail", kwargs={"sku": sku}))
    item = _item_or_404(sku)
    return render(request, template, {"form": form, "item": item, "conflict": conflict},
                  status=conflict_status(request, conflict))


def _conflict(request: HttpRequest, sku: str, error: InventoryError, mine: dict) -> dict:
    changes = [{**change, "fields": _changed_fields(change), "changed_at": datetime.fromisoformat(change["changed_at"])}
               for change in error.extra.get("changes", [])]
    return conflict_panel(error=error, title="Someone else changed this item while you were editing",
                          theirs=error.extra["current"], mine=mine, labels=LABELS, show=_shown, changes=changes,
                          discard_url=reverse("inventory:item_edit", kwargs={"sku": sku}), target="edit-region",
                          form_id="edit-form")


def _shown(value) -> str:
    return "(empty)" if value is None or value == "" else str(value)


def _changed_fields(change: dict) -> list[tuple[str, object, object]]:
    before, after = change.get("before") or {}, change["after"]
    return [(name, before.get(name), after.get(name)) for name in TRACKED_FIELDS
            if not before or before.get(name) != after.get(name)]


@require_http_methods(["GET", "POST"])
@login_required
def stock_import(request: HttpRequest) -> HttpResponse:
    form = StockImportForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        try:
            report = services.stock_import(csv_text=form.cleaned_data["csv_text"],
                                           teams=teams_within(request.user, INVENTORY),
                                           reason=form.cleaned_data["reason"], actor=request.user.get_username(),
                                           audit_actor=actor_of(request))
        except InventoryError as error:
            if not form.cleaned_data.get("csv_file"):
                # Counts pasted into the textarea: their problems belong under it, not under the file field.
                error.errors = {"csv_text" if name == "csv_file" else name: problems
                                for name, problems in error.errors.items()}
            add_error_to_form(form, error)
    status = 400 if form.errors else 200
    return render(request, "inventory/stock_import.html", {"form": form, "report": report}, status=status)


@require_GET
@login_required
def metrics(request: HttpRequest) -> HttpResponse:
    return render(request, "inventory/metrics.html", {"metrics": selectors.metrics_list()})
