from django.urls import include, path

from minimcp.django import mcp

urlpatterns = [path("mcp/", include(mcp.urls))]
