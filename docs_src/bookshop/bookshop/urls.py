from django.urls import include, path
from rest_framework.routers import DefaultRouter

from library.api import BookViewSet, ReviewList
from minimcp.django import mcp

router = DefaultRouter()
router.register("books", BookViewSet)

urlpatterns = [path("api/", include(router.urls)), path("api/reviews/", ReviewList.as_view()),
               path("mcp", include(mcp.urls)),       # serves /mcp and /mcp/ alike
               path(".well-known/", include(mcp.well_known_urls))]   # with "OAUTH": True
