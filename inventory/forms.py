from django import forms

from inventory.services import MAX_IMPORT_BYTES, MAX_QUANTITY
from tems.ids import id_validator
from tems.permissions import INVENTORY
from tems.teams.forms import TeamChoiceMixin

# Skus travel in URLs and in keys (ITEM#<sku>): the shared id shape, nothing to escape.
SKU_VALIDATOR = id_validator


class ItemFieldsForm(forms.Form):
    """The fields a person edits; validates the page and the API alike."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 3}))
    quantity = forms.IntegerField(min_value=0, max_value=MAX_QUANTITY, help_text="Units in stock now.")
    location = forms.CharField(required=False, max_length=200, help_text="Where to find it, e.g. Store room A.")

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("A name is required.")
        return name


class ItemCreateForm(TeamChoiceMixin, ItemFieldsForm):
    """A new item; given the creating ``user``, also the team that keeps it."""

    team_permission = INVENTORY

    sku = forms.CharField(label="SKU", max_length=64, validators=[SKU_VALIDATOR],
                          help_text="A unique code, e.g. TSHIRT-M. It cannot be changed later.")
    field_order = ["sku", "name", "description", "quantity", "location"]

    # These are pages under /inventory/; an item called "new" could never be opened.
    RESERVED_SKUS = frozenset({"new", "import", "metrics"})

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        if user is not None:
            self._set_up_team(user)

    def clean_sku(self) -> str:
        sku = self.cleaned_data["sku"].strip()
        if sku in self.RESERVED_SKUS:
            raise forms.ValidationError(f"{sku!r} is reserved for a page; choose another SKU.")
        return sku


class ItemEditForm(ItemFieldsForm):
    # The version the page was rendered from: saving applies only if the item is still at it.
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    # The values the page was opened with (signed, tems.merge): what this editor changed is what differs from it.
    base = forms.CharField(required=False, widget=forms.HiddenInput)


class AdjustmentForm(forms.Form):
    REMOVE, ADD = "remove", "add"

    direction = forms.ChoiceField(
        label="Change", choices=[(REMOVE, "Remove (sold, used, lost)"), (ADD, "Add (received)")], initial=REMOVE)
    amount = forms.IntegerField(min_value=1, max_value=MAX_QUANTITY, label="Units")
    reason = forms.CharField(max_length=200, required=False, help_text="e.g. sold at the welcome fair")

    @property
    def delta(self) -> int:
        amount = self.cleaned_data["amount"]
        return -amount if self.cleaned_data["direction"] == self.REMOVE else amount


class StockImportForm(forms.Form):
    csv_file = forms.FileField(label="CSV file", required=False, help_text="Columns: sku,quantity (header optional).")
    csv_text = forms.CharField(label="…or paste the counts", required=False,
                               widget=forms.Textarea(attrs={"rows": 6, "placeholder": "sku,quantity\nTSHIRT-M,42"}))
    reason = forms.CharField(max_length=200, initial="stock count")

    MAX_BYTES = MAX_IMPORT_BYTES  # the service's bound, checked here before the upload is read

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("csv_file")
        if upload:
            if upload.size > self.MAX_BYTES:
                raise forms.ValidationError(
                    f"That file is too big for a stock count ({self.MAX_BYTES // 1024} kB at most).")
            try:
                data["csv_text"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file must be UTF-8 text (CSV).") from None
        if not (data.get("csv_text") or "").strip():
            raise forms.ValidationError("Choose a CSV file or paste the counts.")
        return data
