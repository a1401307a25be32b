from django.urls import path

from registrations import api, event_cancel, messages, question_views, views

app_name = "registrations"
urlpatterns = [
    path("events/", views.event_list, name="event_list"),
    path("events/past/", views.event_list_past, name="event_list_past"),
    path("events/new/", views.event_create, name="event_create"),
    path("events/<id:event_id>/", views.event_detail, name="event_detail"),
    path("events/<id:event_id>/edit/", views.event_edit, name="event_edit"),
    path("events/<id:event_id>/register/", views.registration_create, name="registration_create"),
    path("events/<id:event_id>/attendees/", views.attendee_list, name="attendee_list"),
    path("events/<id:event_id>/messages/", messages.message_page, name="event_messages"),
    path("events/<id:event_id>/cancel/", event_cancel.event_cancel_page, name="event_cancel"),
    path("events/<id:event_id>/questions/", question_views.event_questions, name="event_questions"),
    path("events/<id:event_id>/attendees.csv", views.attendee_export, name="attendee_export"),
    path("me/registrations/", views.my_registrations, name="my_registrations"),
    path("registrations/<id:registration_id>/calendar.ics", views.registration_calendar,
         name="registration_calendar"),
    path("registrations/<id:registration_id>/qr.svg", views.registration_qr, name="registration_qr"),
    path("registrations/<id:registration_id>/cancel/", views.registration_cancel, name="registration_cancel"),
    path("registrations/<id:registration_id>/offer/", views.offer_respond, name="offer_respond"),
    path("offers/<str:token>/", views.offer_page, name="offer_page"),
    path("api/events", api.events, name="api_events"),
    path("api/events/<id:event_id>", api.event_detail, name="api_event_detail"),
    path("api/events/<id:event_id>/registrations", api.registration_create, name="api_registration_create"),
    path("api/events/<id:event_id>/attendees", api.attendee_list, name="api_attendee_list"),
    path("api/events/<id:event_id>/questions", api.event_questions, name="api_event_questions"),
    path("api/events/<id:event_id>/messages", api.event_messages, name="api_event_messages"),
    path("api/events/<id:event_id>/cancel", api.event_cancel, name="api_event_cancel"),
    path("api/events/<id:event_id>/messages/<id:message_id>", api.message_detail, name="api_message_detail"),
    path("api/me/registrations", api.my_registrations, name="api_my_registrations"),
    path("api/registrations/<id:registration_id>", api.registration_cancel, name="api_registration_cancel"),
    path("api/offers/<id:offer_id>/accept", api.offer_accept, name="api_offer_accept"),
    path("api/offers/<id:offer_id>/decline", api.offer_decline, name="api_offer_decline"),
]
