"""``python manage.py demo [--port N]``: migrate, create alice (a superuser) and bob on first run,
print their API tokens once, and serve the site with minimcp's HTTP server."""

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.core.wsgi import get_wsgi_application
from django.db import connections

from minimcp.django.models import APIToken
from minimcp.httpd import WSGIServer


class Command(BaseCommand):
    help = "Set up the example database and serve the site on 127.0.0.1."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000, help="0 picks a free port.")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        users = get_user_model()
        if not users.objects.exists():
            users.objects.create_superuser("alice", password="alice")
            users.objects.create_user("bob", password="bob")
            for name in ("alice", "bob"):
                token = APIToken.create(users.objects.get(username=name), "demo")
                self.stdout.write(f"{name}'s API token (shown once): {token}")
        connections.close_all()  # the set-up's connection; requests and calls open their own
        server = WSGIServer(StaticFilesHandler(get_wsgi_application()), "127.0.0.1", options["port"])
        self.stdout.write(f"Serving http://127.0.0.1:{server.port}/ (admin: /admin/, MCP: /mcp/)")
        self.stdout.flush()
        server.run()
