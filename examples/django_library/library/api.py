"""The library's REST API (Django REST framework), which library/mcp.py also publishes as tools."""

from typing import Any

from rest_framework import filters, generics, permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from library.models import Author, Book, Review


class BookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Book
        fields = ["id", "title", "author", "year", "genre"]


class BookViewSet(viewsets.ModelViewSet):
    """The catalogue; DjangoModelPermissions (the project's default) decides who may do what."""

    queryset = Book.objects.all()
    serializer_class = BookSerializer
    filter_backends = [filters.SearchFilter, filters.OrderingFilter]
    search_fields = ["title"]
    ordering_fields = ["title", "year"]

    @action(detail=True, methods=["get"])
    def blurb(self, request: Request, pk: Any = None) -> Response:
        """A one-line description of the book."""
        book = self.get_object()
        return Response({"blurb": f"{book.title} ({book.year}), by {book.author.name}"})


class ReviewSerializer(serializers.ModelSerializer):
    reviewer = serializers.StringRelatedField()
    stars = serializers.IntegerField(min_value=1, max_value=5, help_text="1 (poor) to 5 (superb)")

    class Meta:
        model = Review
        fields = ["id", "book", "reviewer", "stars", "text"]

    def validate_text(self, text: str) -> str:
        if "spoiler" in text.lower():
            raise serializers.ValidationError("Reviews may not contain spoilers.")
        return text


class ReviewList(generics.ListCreateAPIView):
    """Reviews of books: anyone signed in reads and writes them, a few a minute at most."""

    queryset = Review.objects.select_related("reviewer")
    serializer_class = ReviewSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "reviews"
    throttle_classes = [ScopedRateThrottle]

    def perform_create(self, serializer: ReviewSerializer) -> None:
        serializer.save(reviewer=self.request.user)


class SuggestionSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200, help_text="the book you would like us to buy")
    reason = serializers.CharField(required=False, allow_blank=True)


class Suggestions(APIView):
    """Readers suggest books to buy; a plain APIView with no serializer_class of its own."""

    permission_classes = [permissions.IsAuthenticated]

    def get(self, request: Request) -> Response:
        return Response({"books": Book.objects.count(), "authors": Author.objects.count()})

    def post(self, request: Request) -> Response:
        suggestion = SuggestionSerializer(data=request.data)
        suggestion.is_valid(raise_exception=True)
        return Response({"thanks": f"{request.user.get_username()} suggested {suggestion.validated_data['title']}"},
                        status=202)
