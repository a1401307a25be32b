from django.contrib import admin

from tems.models import EmailAddress


@admin.register(EmailAddress)
class EmailAddressAdmin(admin.ModelAdmin):
    """Staff can see who has confirmed their address, and confirm one a student proved another way."""

    list_display = ("user", "email", "verified_at")
    search_fields = ("user__username", "email")
    raw_id_fields = ("user",)
