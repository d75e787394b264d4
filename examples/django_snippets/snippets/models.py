"""Code snippets, in the shape of Django REST framework's tutorial: ``save()`` fills the
highlighted copy, and each snippet belongs to the user who wrote it."""

import html
from typing import Any

from django.conf import settings
from django.db import models

LANGUAGES = [("python", "Python"), ("sql", "SQL"), ("text", "Plain text")]
KEYWORDS = {"python": {"def", "return", "import", "from", "class", "if", "else", "for", "in", "while"},
            "sql": {"select", "from", "where", "insert", "update", "delete", "join", "order", "by"}}


def highlight(code: str, language: str) -> str:
    """The snippet as HTML: numbered lines, the language's keywords in bold."""
    keywords = KEYWORDS.get(language, set())
    lines = []
    for number, line in enumerate(code.splitlines() or [""], start=1):
        words = [f"<b>{html.escape(word)}</b>" if word.lower() in keywords else html.escape(word)
                 for word in line.split(" ")]
        lines.append(f'<span class="line" data-n="{number}">{" ".join(words)}</span>')
    return f'<pre class="language-{language}">' + "\n".join(lines) + "</pre>"


class Collection(models.Model):
    """A folder of one user's snippets."""

    name = models.CharField(max_length=100)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="collections")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Snippet(models.Model):
    """A piece of code, kept with its highlighted copy."""

    created = models.DateTimeField(auto_now_add=True)
    title = models.CharField(max_length=100, blank=True, default="")
    code = models.TextField()
    language = models.CharField(max_length=20, choices=LANGUAGES, default="python")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="snippets")
    collection = models.ForeignKey(Collection, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="snippets")
    highlighted = models.TextField()
    approved = models.BooleanField(default=False, help_text="shown on the front page; moderators decide")

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return self.title or f"snippet {self.pk}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.highlighted = highlight(self.code, self.language)
        super().save(*args, **kwargs)
