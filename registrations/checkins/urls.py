from django.urls import path

from registrations.checkins import api, views

app_name = "checkins"
urlpatterns = [
    path("events/<id:event_id>/door/", views.door, name="door"),
    path("events/<id:event_id>/door/sw.js", views.door_service_worker, name="door_service_worker"),
    path("tickets/<str:token>/", views.ticket, name="ticket"),
    path("api/events/<id:event_id>/checkins", api.checkin_create, name="api_checkin_create"),
    path("api/events/<id:event_id>/checkins/stats", api.checkin_stats, name="api_checkin_stats"),
    path("api/events/<id:event_id>/checkins/<id:registration_id>", api.checkin_undo, name="api_checkin_undo"),
    path("api/events/<id:event_id>/door-search", api.door_search, name="api_door_search"),
    path("api/events/<id:event_id>/door-list", api.door_list, name="api_door_list"),
    path("api/events/<id:event_id>/door-answers/<id:registration_id>", api.door_answers, name="api_door_answers"),
]
