from django.urls import path
from django.views.generic import RedirectView

from inventory import api, views

app_name = "inventory"
urlpatterns = [
    path("inventory/", views.item_list, name="item_list"),
    path("inventory/new/", views.item_create, name="item_create"),
    path("inventory/import/", views.stock_import, name="stock_import"),
    # Operators' diagnostics, not a storekeeper's page: the old address keeps working by redirecting there.
    path("diagnostics/write-metrics/", views.metrics, name="metrics"),
    path("inventory/metrics/", RedirectView.as_view(pattern_name="inventory:metrics", permanent=True),
         name="metrics_moved"),
    path("inventory/<id:sku>/", views.item_detail, name="item_detail"),
    path("inventory/<id:sku>/edit/", views.item_edit, name="item_edit"),
    path("inventory/<id:sku>/adjust/", views.item_adjust, name="item_adjust"),
    path("inventory/<id:sku>/history/", views.item_history, name="item_history"),
    path("api/inventory", api.items, name="api_items"),
    path("api/inventory/<id:sku>", api.item_detail, name="api_item_detail"),
    path("api/inventory/<id:sku>/adjustments", api.adjustments, name="api_adjustments"),
    path("api/inventory/<id:sku>/history", api.history, name="api_history"),
]
