from django.urls import include, path
from rest_framework.routers import DefaultRouter

from minimcp.django import mcp
from snippets.api import Maintenance, Origin, SnippetViewSet

router = DefaultRouter()
router.register("snippets", SnippetViewSet)

urlpatterns = [
    path("api/", include(router.urls)),
    path("api/maintenance/", Maintenance.as_view()),
    path("api/origin/", Origin.as_view()),
    path("mcp", include(mcp.urls)),  # /mcp and /mcp/ alike
]
