"""load.py with a bearer token on every request.

    python benchmarks/authed_load.py PATH/TO/load.py URL [load.py options...]

The token comes from the ``BENCH_BEARER`` environment variable. load.py itself is unchanged: its
worker's header builder is wrapped before its ``main()`` runs.
"""

from __future__ import annotations

import importlib.util
import os
import sys


def main() -> None:
    spec = importlib.util.spec_from_file_location("bench_load", sys.argv[1])
    load = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(load)  # type: ignore[union-attr]
    plain = load.Worker._headers
    authorization = "Bearer " + os.environ["BENCH_BEARER"]

    def with_bearer(self, method, name):  # type: ignore[no-untyped-def]
        headers = plain(self, method, name)
        headers["Authorization"] = authorization
        return headers

    load.Worker._headers = with_bearer
    sys.argv = sys.argv[1:]
    load.main()


if __name__ == "__main__":
    main()
