"""The library's REST API views as tools, each call going through the view as the MCP caller."""

from library.api import BookViewSet, ReviewList, SuggestionSerializer, Suggestions
from minimcp.django.drf import publish

publish(BookViewSet, name="api_books")         # api_books_list, _retrieve, _create, _update, ...
publish(BookViewSet, name="books", actions=["list", "retrieve", "blurb"])   # some actions; an @action by name
publish(ReviewList, name="reviews")            # a generic view: reviews_get, reviews_post
publish(Suggestions, serializer=SuggestionSerializer)   # an APIView: the serializer gives the schema
publish(ReviewList, name="open_reviews", model_permissions=False)   # the view's permission classes alone
