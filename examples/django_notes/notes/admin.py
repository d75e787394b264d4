from django.contrib import admin

from notes.models import Note

admin.site.register(Note, list_display=("id", "owner", "text"))
