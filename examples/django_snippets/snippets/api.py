"""The snippets' REST API, as the DRF tutorial writes it: any signed-in user may write, the owner
alone may change or delete; plus two views that look at where a request comes from."""

from typing import Any

from django.db.models import Model
from rest_framework import permissions, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from snippets.models import Snippet


class IsOwnerOrReadOnly(permissions.BasePermission):
    """Reading for everyone; writing for the snippet's owner."""

    def has_object_permission(self, request: Request, view: Any, obj: Model) -> bool:
        return request.method in permissions.SAFE_METHODS or getattr(obj, "owner", None) == request.user


class LoopbackOnly(permissions.BasePermission):
    """Requests from this machine's own address (127.0.0.1) only."""

    message = "Only from 127.0.0.1."

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.META.get("REMOTE_ADDR") == "127.0.0.1"


class AddressThrottle(SimpleRateThrottle):
    """A rate per client address (DRF's ``get_ident``: X-Forwarded-For when sent, else REMOTE_ADDR)."""

    scope = "address"

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class SnippetSerializer(serializers.ModelSerializer):
    owner = serializers.ReadOnlyField(source="owner.username")

    class Meta:
        model = Snippet
        fields = ["id", "title", "code", "language", "owner", "highlighted"]
        read_only_fields = ["highlighted"]


class SnippetViewSet(viewsets.ModelViewSet):
    """Snippets: read by anyone signed in, changed and deleted by their owner."""

    queryset = Snippet.objects.all()
    serializer_class = SnippetSerializer
    permission_classes = [permissions.IsAuthenticatedOrReadOnly, IsOwnerOrReadOnly]

    def perform_create(self, serializer: SnippetSerializer) -> None:
        serializer.save(owner=self.request.user)


class Maintenance(APIView):
    """Housekeeping figures, for this machine only."""

    permission_classes = [permissions.IsAuthenticated, LoopbackOnly]

    def get(self, request: Request) -> Response:
        return Response({"snippets": Snippet.objects.count(), "address": request.META["REMOTE_ADDR"]})


class Origin(APIView):
    """Where the request came from, as the site sees it; a few a while per address."""

    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [AddressThrottle]

    def get(self, request: Request) -> Response:
        return Response({"address": request.META["REMOTE_ADDR"],
                         "forwarded_for": request.META.get("HTTP_X_FORWARDED_FOR")})
