#!/usr/bin/env python3
"""A stand-in for the user's browser, for ``BROWSER=`` (what ``webbrowser.open`` runs): signs in
to ``examples/oauth_server.py`` as demo / demo and follows the redirect back to the program.

Like a real browser it returns at once (the program's ``webbrowser.open`` waits for this command)
and does its work in a detached child. Standard library only: it runs under any ``python3``.
"""

import os
import re
import sys
import urllib.parse
import urllib.request


def sign_in(authorization_url: str) -> None:
    with urllib.request.urlopen(authorization_url, timeout=30) as page:  # /authorize -> /login?request=...
        form, login_url = page.read().decode(), page.url
    request_id = re.search(r'name="request" value="([^"]+)"', form)
    action = re.search(r'action="([^"]+)"', form)
    if request_id is None or action is None:
        raise SystemExit(f"no sign-in form at {login_url}")
    data = urllib.parse.urlencode({"request": request_id.group(1), "username": "demo", "password": "demo"}).encode()
    target = urllib.parse.urljoin(login_url, action.group(1).replace("&amp;", "&"))
    with urllib.request.urlopen(target, data=data, timeout=60):  # -> 302 to the loopback callback, followed
        pass


if __name__ == "__main__":
    if os.fork() == 0:
        sign_in(sys.argv[1])
        os._exit(0)
