from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from minimcp.django import mcp


def index(request: HttpRequest) -> HttpResponse:
    who = request.user.get_username() if request.user.is_authenticated else "nobody"
    return HttpResponse(f"Signed in as {who}. Admin: /admin/ \u2014 MCP endpoint: /mcp/", content_type="text/plain; charset=utf-8")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),  # the site's login page
    path("mcp", include(mcp.urls)),  # /mcp and /mcp/ alike
    path(".well-known/", include(mcp.well_known_urls)),  # how MCP clients find the sign-in
    path("", index),
]
