from django.urls import path

from tems import lab_views

app_name = "lab"
urlpatterns = [
    path("lab/", lab_views.lab_index, name="index"),
    path("lab/registration-race/", lab_views.lab_registration_race, name="registration_race"),
    path("lab/lost-update/", lab_views.lab_lost_update, name="lost_update"),
    path("lab/costs/", lab_views.lab_costs, name="costs"),
    path("lab/try-it/", lab_views.lab_tryit, name="tryit"),
    path("lab/try-it/reset/", lab_views.lab_tryit_reset, name="tryit_reset"),
    path("api/lab/registration-race", lab_views.api_registration_race, name="api_registration_race"),
    path("api/lab/lost-update", lab_views.api_lost_update, name="api_lost_update"),
]
