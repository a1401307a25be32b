from django.urls import path

from registrations.privacy import api, views

app_name = "privacy"
urlpatterns = [
    path("me/data/", views.personal_data, name="personal_data"),
    path("me/data/tems-my-data.json", views.personal_data_download, name="personal_data_download"),
    path("me/data/erase/", views.personal_data_erase, name="personal_data_erase"),
    path("events/<id:event_id>/retention/", views.event_retention, name="event_retention"),
    path("api/me/data", api.personal_data, name="api_personal_data"),
    path("api/me/erase", api.personal_data_erase, name="api_personal_data_erase"),
    path("api/events/<id:event_id>/retention", api.event_retention, name="api_event_retention"),
]
