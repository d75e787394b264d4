"""``python manage.py demo [--port N]``: migrate, create the users and a few snippets on first run,
print their API tokens once, and serve the site with minimcp's HTTP server.

alice is a superuser; bob may view, add and change snippets and collections but delete nothing;
carol may only view snippets. Each has a collection and a snippet."""

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.core.wsgi import get_wsgi_application
from django.db import connections

from minimcp.django.models import APIToken
from minimcp.httpd import WSGIServer
from snippets.models import Collection, Snippet

PERMISSIONS = {"bob": ["view_snippet", "add_snippet", "change_snippet", "view_collection", "add_collection",
                       "change_collection"],
               "carol": ["view_snippet"]}


def seed() -> list[str]:
    """The users, their permissions, a collection and a snippet each; their tokens, as lines to print once."""
    users = get_user_model()
    users.objects.create_superuser("alice", password="alice")
    for name, codenames in PERMISSIONS.items():
        users.objects.create_user(name, password=name).user_permissions.set(
            Permission.objects.filter(codename__in=codenames))
    lines = []
    for user in users.objects.order_by("username"):
        collection = Collection.objects.create(name=f"{user.username}'s drafts", owner=user)
        Snippet.objects.create(title=f"{user.username}'s hello", code="print('hello')", owner=user,
                               collection=collection)
        lines.append(f"{user.username}'s API token (shown once): {APIToken.create(user, 'demo')}")
    return lines


class Command(BaseCommand):
    help = "Set up the snippets database on first run and serve the site on 127.0.0.1 (--port 0: any free port)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        if not get_user_model().objects.exists():
            self.stdout.write("\n".join(seed()))
        connections.close_all()  # the set-up's connection; requests and calls open their own
        server = WSGIServer(get_wsgi_application(), "127.0.0.1", options["port"])
        self.stdout.write(f"Serving http://127.0.0.1:{server.port}/ (REST API: /api/, MCP: /mcp)")
        self.stdout.flush()
        server.run()
