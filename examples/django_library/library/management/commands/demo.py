"""``python manage.py demo [--port N]``: migrate, create the users and a few books on first run,
print their tokens once, and serve the site with minimcp's HTTP server.

alice is a superuser; bob may view, add and change books and authors, and add reviews, but delete
nothing; carol has no permission at all."""

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.core.wsgi import get_wsgi_application
from django.db import connections
from rest_framework.authtoken.models import Token

from library.models import Author, Book
from minimcp.django.models import APIToken
from minimcp.httpd import WSGIServer

BOBS = ["view_book", "add_book", "change_book", "view_author", "add_author", "view_review", "add_review"]


def seed() -> list[str]:
    """The users, their permissions and a few books; each user's tokens, as lines to print once."""
    users = get_user_model()
    users.objects.create_superuser("alice", password="alice")
    bob = users.objects.create_user("bob", password="bob")
    bob.user_permissions.set(Permission.objects.filter(codename__in=BOBS))
    users.objects.create_user("carol", password="carol")
    le_guin = Author.objects.create(name="Ursula K. Le Guin", born=1929)
    calvino = Author.objects.create(name="Italo Calvino", born=1923)
    Book.objects.create(title="The Dispossessed", author=le_guin, year=1974)
    Book.objects.create(title="The Left Hand of Darkness", author=le_guin, year=1969)
    Book.objects.create(title="Invisible Cities", author=calvino, year=1972)
    lines = []
    for user in users.objects.order_by("username"):
        lines.append(f"{user.username}'s API token (shown once): {APIToken.create(user, 'demo')}")
        lines.append(f"{user.username}'s DRF token: {Token.objects.create(user=user).key}")
    return lines


class Command(BaseCommand):
    help = "Set up the library's database on first run and serve the site on 127.0.0.1 (--port 0: any free port)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        if not get_user_model().objects.exists():
            self.stdout.write("\n".join(seed()))
        connections.close_all()  # the set-up's connection; requests and calls open their own
        server = WSGIServer(get_wsgi_application(), "127.0.0.1", options["port"])
        self.stdout.write(f"Serving http://127.0.0.1:{server.port}/ (REST API: /api/, MCP: /mcp/)")
        self.stdout.flush()
        server.run()
