from django.conf import settings
from django.db import models


class Note(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes")
    text = models.TextField()

    class Meta:
        ordering = ["id"]
        permissions = [("view_all_notes", "Can read every user's notes")]

    def __str__(self) -> str:
        return self.text
