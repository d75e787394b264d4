"""The library's tools, found at start-up like admin.py: its models, and its REST API's views."""

from library import rest_tools  # noqa: F401  (the REST API's views, published below)
from library.models import Author, Book
from minimcp.django.toolsets import ModelToolset


class BookTools(ModelToolset):
    model = Book
    fields = ["id", "title", "author", "year"]
    filters = ["author"]                       # list_books(author=...)
    search = ["title"]                         # list_books(search=...)
    ordering = ["title", "year"]               # list_books(order_by="-year")
    page_size = 20                             # the default and the most per page
    create = update = delete = True            # opt in; list_books and get_book are always there
    write_fields = ["title", "author", "year"] # required with create/update ("__all__": the shown editable ones)
    confirm = True                             # delete_book asks the user first (ctx.elicit)

    def get_queryset(self, request):           # what request.user may reach
        return super().get_queryset(request).filter(library=request.user.library)

    def before_save(self, request, instance, created):   # what the caller does not send
        instance.library = request.user.library


class AuthorTools(ModelToolset):
    model = Author


BookTools.register()
AuthorTools.register()
