"""API tokens in the admin: issued on save, shown once on the page that answers the save, listed
by their hint after that. OAuth clients and sign-ins are listed; deleting a sign-in (or a client)
revokes its tokens.

The token is on that page only, sent ``Cache-Control: no-store``: never in a message of
``django.contrib.messages``, whose default storage keeps messages in a cookie that is signed but
readable, travels with every request until shown and may land in logs along the way.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template import Engine, RequestContext
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from minimcp.django.models import APIToken, OAuthClient, OAuthGrant

#: The page a new token is shown on, in the admin's own look.
_ISSUED = """{% extends "admin/base_site.html" %}
{% block content %}
<p>The new token is <code id="token">{{ token }}</code> — copy it now: it will not be shown again.</p>
<p>It acts as {{ owner }} ({{ name }}) at this site's MCP endpoint, sent as <code>Authorization: Bearer</code>.</p>
<p><a href="{{ listing }}">Back to the API tokens</a> · <a href="{{ add }}">Add another</a></p>
{% endblock %}
"""


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "hint", "created", "last_used")
    list_filter = ("user",)
    fields = ("user", "name", "hint", "created", "last_used")
    readonly_fields = ("hint", "created", "last_used")
    search_fields = ("name", "user__username")

    def save_model(self, request: Any, obj: APIToken, form: Any, change: bool) -> None:
        if not change:
            obj.shown_once = obj.issue()  # for response_add, on this object only; never stored
        super().save_model(request, obj, form, change)

    def response_add(self, request: HttpRequest, obj: APIToken, post_url_continue: str | None = None) -> HttpResponse:
        """The answer to the save: the page with the token, instead of a redirect and a message."""
        url = f"admin:{self.opts.app_label}_{self.opts.model_name}_%s"
        context = {**self.admin_site.each_context(request), "title": "API token issued", "opts": self.opts,
                   "token": obj.shown_once, "owner": obj.user, "name": obj.name,
                   "listing": reverse(url % "changelist", current_app=self.admin_site.name),
                   "add": reverse(url % "add", current_app=self.admin_site.name)}
        response = HttpResponse(Engine.get_default().from_string(_ISSUED).render(RequestContext(request, context)))
        add_never_cache_headers(response)
        return response


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
