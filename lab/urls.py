from django.urls import path

from lab import views

app_name = "lab"
urlpatterns = [
    path("lab/", views.lab_index, name="index"),
    path("lab/registration-race/", views.lab_registration_race, name="registration_race"),
    path("lab/lost-update/", views.lab_lost_update, name="lost_update"),
    path("lab/costs/", views.lab_costs, name="costs"),
    path("lab/last-seat/", views.lab_last_seat, name="last_seat"),
    path("lab/try-it/", views.lab_tryit, name="tryit"),
    path("lab/try-it/reset/", views.lab_tryit_reset, name="tryit_reset"),
    path("api/lab/registration-race", views.api_registration_race, name="api_registration_race"),
    path("api/lab/lost-update", views.api_lost_update, name="api_lost_update"),
]
