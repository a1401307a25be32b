from django.contrib import admin

from tems.models import EmailAddress, SingleSignOnIdentity


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
