from django.conf import settings
from django.db import models


class Author(models.Model):
    """A writer of books."""

    name = models.CharField("name", max_length=100, help_text="as printed on the cover")
    born = models.IntegerField("year of birth", null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Book(models.Model):
    """A book in the library's catalogue."""

    title = models.CharField("title", max_length=200)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books", verbose_name="author")
    year = models.IntegerField("year published", help_text="the first edition's year")
    genre = models.CharField(max_length=20, choices=[("novel", "Novel"), ("poetry", "Poetry"), ("essay", "Essay")],
                             default="novel")

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class Review(models.Model):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    stars = models.IntegerField()
    text = models.TextField(blank=True)
