"""Play the user's browser for the harness's ``authorization-code-grant`` scenario.

The harness prints an authorization URL and waits for its callback. This script reads the harness's
output on stdin (echoing it), and for the URL it finds, follows ``/authorize`` to the example
server's login page, signs in as the demo user, and follows the redirect to the harness's
callback, as a person with a browser would.

    harness authorization ... | python conformance/sign_in.py
"""

from __future__ import annotations

import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import requests

USER, PASSWORD = "demo", "demo"


def sign_in(url: str) -> None:
    browser = requests.Session()
    login_page = browser.get(url, timeout=30)
    request_id = parse_qs(urlsplit(login_page.url).query).get("request", [""])[0]
    login_url = login_page.url.split("?", 1)[0]
    signed_in = browser.post(login_url, data={"request": request_id, "username": USER, "password": PASSWORD},
                             allow_redirects=False, timeout=30)
    callback = signed_in.headers["Location"]
    for _ in range(40):  # the harness may print the URL a moment before its callback server listens
        try:
            browser.get(callback, timeout=30)
            return
        except requests.ConnectionError:
            time.sleep(0.25)


def main() -> None:
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        text = line.strip()
        if text.startswith("http") and "/authorize?" in text:
            threading.Thread(target=sign_in, args=(text,), daemon=True).start()


if __name__ == "__main__":
    main()
