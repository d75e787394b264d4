"""The library's MCP tools, found at start-up like admin.py: two models and the REST API's views.

Every tool runs as the signed-in user and needs that user's permissions: bob (no delete
permission) sees neither ``delete_book`` nor ``api_books_destroy``. The reviews API is published
with ``model_permissions=False``: its own ``IsAuthenticated`` decides, as it does on the web."""

from django.db.models import QuerySet
from django.http import HttpRequest

from library.api import BookViewSet, ReviewList, SuggestionSerializer, Suggestions
from library.models import Author, Book, Review
from minimcp.django.drf import publish
from minimcp.django.toolsets import ModelToolset


class AuthorTools(ModelToolset):
    model = Author
    search = ["name"]
    create = True
    write_fields = ["name", "born"]


class BookTools(ModelToolset):
    model = Book
    fields = ["id", "title", "author", "year", "genre"]
    filters = ["author", "genre"]
    search = ["title", "author__name"]
    ordering = ["title", "year"]
    page_size = 10
    create = update = delete = True
    write_fields = ["title", "author", "year", "genre"]
    confirm = True


class MyReviewTools(ModelToolset):
    """Each user reaches their own reviews only, and writes them as themselves."""

    model = Review
    fields = ["id", "book", "stars", "text"]
    name = "my_review"
    create = True
    write_fields = ["book", "stars", "text"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Review]:
        return super().get_queryset(request).filter(reviewer=request.user)

    def before_save(self, request: HttpRequest, instance: Review, created: bool) -> None:
        instance.reviewer = request.user


AuthorTools.register()
BookTools.register()
MyReviewTools.register()
publish(BookViewSet, name="api_books", actions=["list", "retrieve", "create", "partial_update", "destroy", "blurb"])
publish(ReviewList, name="api_reviews", model_permissions=False)  # anyone signed in reviews, as the view says
publish(Suggestions, serializer=SuggestionSerializer)  # suggestions_get, suggestions_post
