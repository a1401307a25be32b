"""Forms of teams, and the "organizing team" choice that creating an event or an item asks for."""

from __future__ import annotations

import re

from django import forms
from django.conf import settings

from tems import accounts
from tems.ids import ID_HELP, id_validator
from tems.permissions import ROLES, Permission, access_of
from tems.teams.selectors import all_teams, teams_holding

_USERNAMES = re.compile(r"[\s,]+")
MAX_ADMINS = 20


class TeamCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="As events show it, e.g. “Chemistry Society”.")
    id = forms.CharField(label="Short id", max_length=64, validators=[id_validator],
                         help_text=f"Used in addresses, e.g. chem-soc. {ID_HELP}")
    admins = forms.CharField(label="Team admins", max_length=2000,
                             help_text="Their usernames, separated by spaces or commas.")

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if problem := accounts.name_problem(name):
            raise forms.ValidationError(problem, code="invalid")
        return name

    def clean_id(self) -> str:
        # /teams/new/ is the creation's address: a team called "new" could never be opened.
        if self.cleaned_data["id"] == "new":
            raise forms.ValidationError("“new” is reserved for a page; choose another id.")
        return self.cleaned_data["id"]

    def clean_admins(self) -> list[str]:
        names = [name for name in _USERNAMES.split(self.cleaned_data["admins"]) if name]
        if not names:
            raise forms.ValidationError("Name at least one team admin.")
        if len(names) > MAX_ADMINS:
            raise forms.ValidationError(f"At most {MAX_ADMINS} admins at creation; add more on the team's page.")
        return list(dict.fromkeys(names))


def role_field() -> forms.ChoiceField:
    return forms.ChoiceField(choices=list(ROLES.items()))


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = role_field()


class MemberRoleForm(forms.Form):
    role = role_field()


class TeamApprovalForm(forms.Form):
    needs_approval = forms.BooleanField(required=False, label="Events need approval",
                                        help_text="A new event stays a draft, unseen by students, until an "
                                                  "approver of the overseeing team publishes it.")
    overseen_by = forms.ChoiceField(required=False, label="Overseen by",
                                    help_text="Its team admins and event managers approve this team's events.")

    def __init__(self, *args, team_id: str, **kwargs):
        super().__init__(*args, **kwargs)
        others = [(team.pk, team.name) for team in all_teams() if team.pk != team_id]
        self.fields["overseen_by"].choices = [("", "No team"), *others]


class DoorVolunteersForm(forms.Form):
    volunteers = forms.TypedMultipleChoiceField(coerce=int, required=False, widget=forms.CheckboxSelectMultiple,
                                                label="Door volunteers at this event")

    def __init__(self, *args, choices: list[tuple[int, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["volunteers"].choices = choices


class TeamChoiceMixin:
    """Adds ``team``, the organizing team, to a create form: one of the teams in which ``user`` holds
    ``team_permission``. A person with one such team need not say it; a platform admin may leave it empty (then
    only platform admins may manage what is created)."""

    team_permission: Permission

    def _set_up_team(self, user) -> None:
        self.team_user = user
        teams = teams_holding(user=user, permission=self.team_permission)
        self.platform_admin = access_of(user).platform_admin
        choices = [(team.pk, team.name) for team in teams]
        if self.platform_admin:
            choices.insert(0, ("", "No team (platform admins only)"))
        self.fields["team"] = forms.ChoiceField(choices=choices, required=False, label="Organizing team",
                                                initial=choices[0][0] if len(choices) == 1 else None)
        self.order_fields(["team"])
        self.only_team = teams[0].pk if len(teams) == 1 and not self.platform_admin else None

    def clean_team(self) -> str | None:
        team = self.cleaned_data.get("team") or None
        if team is None and self.only_team:
            return self.only_team
        if team is None and not self.platform_admin:
            raise forms.ValidationError("Choose the organizing team.", code="required")
        return team


class TeamRetentionForm(forms.Form):
    days = forms.IntegerField(label="Keep the log for (days)", min_value=settings.TEMS_AUDIT_RETENTION_MIN_DAYS,
                              max_value=settings.TEMS_AUDIT_RETENTION_MAX_DAYS,
                              help_text=f"From {settings.TEMS_AUDIT_RETENTION_MIN_DAYS} to "
                                        f"{settings.TEMS_AUDIT_RETENTION_MAX_DAYS} days; applies to entries written "
                                        "from now on.")
