"""The snippets' MCP tools: the models through toolsets, the REST API through its views.

bob may view, add and change snippets and collections but delete nothing: ``api_snippets_destroy``
keeps the model's ``delete_snippet`` permission although the view would let him delete his own;
``own_snippets_destroy`` is published with ``model_permissions=False``, the view's rules alone."""

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest

from minimcp.django.drf import publish
from minimcp.django.toolsets import ModelToolset
from snippets.api import Maintenance, Origin, SnippetViewSet
from snippets.models import Collection, Snippet


class CollectionTools(ModelToolset):
    """Each user's own collections."""

    model = Collection
    fields = ["id", "name"]
    create = True
    write_fields = ["name"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        return super().get_queryset(request).filter(owner=request.user)

    def before_save(self, request: HttpRequest, instance: Any, created: bool) -> None:
        instance.owner = request.user


class SnippetTools(ModelToolset):
    """Each user's own snippets; ``approved`` is shown, and only moderators set it (in the admin)."""

    model = Snippet
    fields = ["id", "title", "code", "language", "collection", "highlighted", "approved"]
    create = update = True
    write_fields = ["title", "code", "language", "collection"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Snippet]:
        return super().get_queryset(request).filter(owner=request.user)

    def before_save(self, request: HttpRequest, instance: Any, created: bool) -> None:
        if created:
            instance.owner = request.user


CollectionTools.register()
SnippetTools.register()
publish(SnippetViewSet, name="api_snippets")
publish(SnippetViewSet, name="own_snippets", actions=["destroy"], model_permissions=False)
publish(Maintenance)
publish(Origin)
