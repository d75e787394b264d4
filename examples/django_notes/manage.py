#!/usr/bin/env python
"""The example Django project: ``python examples/django_notes/manage.py demo`` sets it up and serves it."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notesite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
