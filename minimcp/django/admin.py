"""API tokens in the admin: issued on save, shown once in a message, listed by their hint after that.
OAuth clients and sign-ins are listed; deleting a sign-in (or a client) revokes its tokens."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages

from minimcp.django.models import APIToken, OAuthClient, OAuthGrant


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "hint", "created", "last_used")
    list_filter = ("user",)
    fields = ("user", "name", "hint", "created", "last_used")
    readonly_fields = ("hint", "created", "last_used")
    search_fields = ("name", "user__username")

    def save_model(self, request: Any, obj: APIToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        token = obj.issue()
        super().save_model(request, obj, form, change)
        messages.success(request, f"The new token is {token} \u2014 copy it now: it will not be shown again.")


@admin.register(OAuthClient)
class OAuthClientAdmin(admin.ModelAdmin):
    list_display = ("__str__", "client_id", "created", "used")
    list_filter = ("used",)
    search_fields = ("name", "client_id")
    readonly_fields = ("client_id", "name", "registration", "created", "used")

    def has_add_permission(self, request: Any) -> bool:
        return False  # clients register themselves


@admin.register(OAuthGrant)
class OAuthGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "client", "created", "access_expires_at")
    list_filter = ("client",)
    search_fields = ("user__username", "client__name")
    fields = ("user", "client", "scope", "redirect_uri", "created", "access_expires_at", "refresh_expires_at")
    readonly_fields = fields

    def has_add_permission(self, request: Any) -> bool:
        return False  # a sign-in is made by its user on the consent page
