from django.urls import path

from registrations import api, views
from registrations.approvals import api as approval_api
from registrations.approvals import views as approval_views
from registrations.attendees import api as attendee_api
from registrations.attendees import views as attendee_views
from registrations.cancellation import api as cancellation_api
from registrations.cancellation import views as cancellation_views
from registrations.events import api as event_api
from registrations.events import views as event_views
from registrations.messages import api as message_api
from registrations.messages import views as message_views
from registrations.offers import api as offer_api
from registrations.offers import views as offer_views
from registrations.questions import api as question_api
from registrations.questions import views as question_views
from registrations.reports import views as report_views

app_name = "registrations"
urlpatterns = [
    path("events/", event_views.event_list, name="event_list"),
    path("events/past/", event_views.event_list_past, name="event_list_past"),
    path("events/calendar/", event_views.event_calendar, name="event_calendar"),
    path("events/new/", event_views.event_create, name="event_create"),
    path("events/<id:event_id>/", event_views.event_detail, name="event_detail"),
    path("events/<id:event_id>/edit/", event_views.event_edit, name="event_edit"),
    path("events/<id:event_id>/copy/", event_views.event_copy, name="event_copy"),
    path("events/<id:event_id>/report/", report_views.report_page, name="event_report"),
    path("events/<id:event_id>/report.csv", report_views.report_csv, name="event_report_csv"),
    path("events/<id:event_id>/doors/", event_views.event_doors, name="event_doors"),
    path("events/<id:event_id>/log/", event_views.event_log, name="event_log"),
    path("events/<id:event_id>/register/", views.registration_create, name="registration_create"),
    path("events/<id:event_id>/attendees/", attendee_views.attendee_list, name="attendee_list"),
    path("events/<id:event_id>/messages/", message_views.message_page, name="event_messages"),
    path("events/<id:event_id>/messages/sent/", message_views.message_progress, name="event_message_progress"),
    path("events/<id:event_id>/cancel/", cancellation_views.event_cancel_page, name="event_cancel"),
    path("events/<id:event_id>/questions/", question_views.event_questions, name="event_questions"),
    path("events/<id:event_id>/attendees.csv", attendee_views.attendee_export, name="attendee_export"),
    path("approvals/", approval_views.approval_list, name="approval_list"),
    path("approvals/<id:draft_id>/publish/", approval_views.event_publish, name="event_publish"),
    path("approvals/<id:draft_id>/send-back/", approval_views.event_send_back, name="event_send_back"),
    path("me/registrations/", views.my_registrations, name="my_registrations"),
    path("me/calendar.ics", views.calendar_feed, name="calendar_feed"),
    path("registrations/<id:registration_id>/calendar.ics", views.registration_calendar,
         name="registration_calendar"),
    path("registrations/<id:registration_id>/qr.svg", views.registration_qr, name="registration_qr"),
    path("registrations/<id:registration_id>/cancel/", views.registration_cancel, name="registration_cancel"),
    path("registrations/<id:registration_id>/offer/", offer_views.offer_respond, name="offer_respond"),
    path("offers/<str:token>/", offer_views.offer_page, name="offer_page"),
    path("api/events", event_api.events, name="api_events"),
    path("api/events/<id:event_id>", event_api.event_detail, name="api_event_detail"),
    path("api/events/<id:event_id>/registrations", api.registration_create, name="api_registration_create"),
    path("api/events/<id:event_id>/attendees", attendee_api.attendee_list, name="api_attendee_list"),
    path("api/events/<id:event_id>/questions", question_api.event_questions, name="api_event_questions"),
    path("api/events/<id:event_id>/messages", message_api.event_messages, name="api_event_messages"),
    path("api/events/<id:event_id>/cancel", cancellation_api.event_cancel, name="api_event_cancel"),
    path("api/events/<id:event_id>/messages/<id:message_id>", message_api.message_detail, name="api_message_detail"),
    path("api/drafts/<id:draft_id>/publish", approval_api.event_publish, name="api_event_publish"),
    path("api/me/registrations", api.my_registrations, name="api_my_registrations"),
    path("api/registrations/<id:registration_id>", api.registration_cancel, name="api_registration_cancel"),
    path("api/offers/<id:offer_id>/accept", offer_api.offer_accept, name="api_offer_accept"),
    path("api/offers/<id:offer_id>/decline", offer_api.offer_decline, name="api_offer_decline"),
]
