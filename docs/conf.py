"""The documentation site: Sphinx with MyST (the pages are Markdown, as the README is) and autodoc
(the API reference comes from the package's docstrings). Built in strict mode by .ci/run:
``sphinx-build -W --keep-going -b html docs site`` (the ``docs`` extra). Every code block of the
pages is a file under docs_src/, included with ``literalinclude``, which tests/test_docs.py runs."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minimcp import __version__  # noqa: E402  (the checkout's package, found through the line above)

project = "minimcp"
release = __version__
version = __version__
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"minimcp {__version__}"
autodoc_member_order = "bysource"
myst_heading_anchors = 3
