from django.conf import settings
from django.db import models


class Library(models.Model):
    """A branch of the bookshop's lending library, run by one librarian (``user.library``)."""

    name = models.CharField(max_length=100)
    librarian = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="library")


class Author(models.Model):
    name = models.CharField("name", max_length=100, help_text="as printed on the cover")

    def __str__(self) -> str:
        return self.name


class Book(models.Model):
    library = models.ForeignKey(Library, on_delete=models.CASCADE)
    title = models.CharField("title", max_length=200)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, verbose_name="author")
    year = models.IntegerField("year published", help_text="the first edition's year")

    def __str__(self) -> str:
        return self.title


class Review(models.Model):
    book = models.ForeignKey(Book, on_delete=models.CASCADE)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    stars = models.IntegerField()
    text = models.TextField(blank=True)
