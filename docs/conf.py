"""The documentation site: Sphinx with MyST (the pages are Markdown, as the README is) and autodoc
(the API reference comes from the package's docstrings, laid out by docs/_ext/minimcp_reference.py: every
public module, each object described once). Built in strict mode by .ci/run:
``sphinx-build -W --keep-going -b html docs site`` (the ``docs`` extra). Every code block of the
pages is a file under docs_src/, included with ``literalinclude``, which tests/test_docs.py runs."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

from minimcp import __version__  # noqa: E402  (the checkout's package, found through the line above)

# The Django host's models, admin and DRF views import only inside a configured project.
settings.configure(INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework",
                                   "minimcp.django"])
django.setup()

project = "minimcp"
release = __version__
version = __version__
extensions = ["myst_parser", "sphinx.ext.autodoc", "minimcp_reference"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"minimcp {__version__}"
autodoc_member_order = "bysource"
# A long signature puts a parameter a line, with its type (the types are not moved into the
# descriptions, where they would be linked by their last name only: ``type`` is many models' field).
python_maximum_signature_line_length = 88
# Where an object exported from several modules is described: the first page, then module, that lists it.
minimcp_reference_pages = ["reference/types", "reference/shared", "reference/server", "reference/lowlevel",
                           "reference/client", "reference/hosts", "reference/deployment", "reference/api"]
myst_heading_anchors = 3
