from django.urls import path

from tems.teams import views

app_name = "teams"
urlpatterns = [
    path("teams/", views.team_list, name="team_list"),
    path("teams/new/", views.team_create, name="team_create"),
    path("teams/<id:team_id>/", views.team_detail, name="team_detail"),
    path("teams/<id:team_id>/approval/", views.team_approval, name="team_approval"),
    path("teams/<id:team_id>/members/", views.member_add, name="member_add"),
    path("teams/<id:team_id>/members/<int:membership_id>/role/", views.member_role, name="member_role"),
    path("teams/<id:team_id>/members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
    path("teams/<id:team_id>/log/", views.team_log, name="team_log"),
    path("teams/<id:team_id>/retention/", views.team_retention, name="team_retention"),
]
