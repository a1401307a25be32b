from django.contrib import admin

from tems.models import EmailAddress, Membership, SingleSignOnIdentity, Team


@admin.register(EmailAddress)
class EmailAddressAdmin(admin.ModelAdmin):
    """Staff can see who has confirmed their address, and confirm one a student proved another way."""

    list_display = ("user", "email", "verified_at")
    search_fields = ("user__username", "email")
    raw_id_fields = ("user",)


@admin.register(SingleSignOnIdentity)
class SingleSignOnIdentityAdmin(admin.ModelAdmin):
    """Staff can see which provider subject logs in to which account, and unlink one (the next log-in of that
    subject then makes a new account)."""

    list_display = ("user", "issuer", "subject", "created_at")
    search_fields = ("user__username", "subject")
    raw_id_fields = ("user",)
    readonly_fields = ("created_at",)


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ("user",)
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Platform admins can see every team and its members here too (the team pages are the usual way)."""

    list_display = ("name", "id", "created_at")
    search_fields = ("name", "id")
    readonly_fields = ("created_at",)
    inlines = [MembershipInline]
