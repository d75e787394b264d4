#!/usr/bin/env python
"""The example snippets project: ``python examples/django_snippets/manage.py demo`` sets it up and serves it."""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "snippetsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
