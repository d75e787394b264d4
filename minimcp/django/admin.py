"""API tokens in the admin: issued on save, shown once in a message, listed by their hint after that."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages

from minimcp.django.models import APIToken


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
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
