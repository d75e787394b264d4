#!/usr/bin/env python
"""The example library project: ``python examples/django_library/manage.py demo`` sets it up and serves it."""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "librarysite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
