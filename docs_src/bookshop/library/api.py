"""The library's REST API (Django REST framework), which library/rest_tools.py publishes as tools."""

from typing import Any

from rest_framework import generics, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from library.models import Book, Review


class BookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Book
        fields = ["id", "title", "author", "year"]


class BookViewSet(viewsets.ModelViewSet):
    queryset = Book.objects.all()
    serializer_class = BookSerializer

    def get_queryset(self) -> Any:
        return super().get_queryset().filter(library=self.request.user.library)

    def perform_create(self, serializer: BookSerializer) -> None:
        serializer.save(library=self.request.user.library)

    @action(detail=True, methods=["get"])
    def blurb(self, request: Request, pk: Any = None) -> Response:
        """A one-line description of the book."""
        book = self.get_object()
        return Response({"blurb": f"{book.title} ({book.year}), by {book.author.name}"})


class ReviewSerializer(serializers.ModelSerializer):
    stars = serializers.IntegerField(min_value=1, max_value=5)

    class Meta:
        model = Review
        fields = ["id", "book", "stars", "text"]


class ReviewList(generics.ListCreateAPIView):
    queryset = Review.objects.all()
    serializer_class = ReviewSerializer

    def perform_create(self, serializer: ReviewSerializer) -> None:
        serializer.save(reviewer=self.request.user)


class SuggestionSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200, help_text="the book you would like us to buy")


class Suggestions(APIView):
    """Readers suggest books to buy: a plain APIView with no serializer_class of its own."""

    def get(self, request: Request) -> Response:
        return Response({"books": Book.objects.count()})

    def post(self, request: Request) -> Response:
        suggestion = SuggestionSerializer(data=request.data)
        suggestion.is_valid(raise_exception=True)
        return Response({"thanks": suggestion.validated_data["title"]}, status=202)
