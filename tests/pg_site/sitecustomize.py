"""In a process a test started while the suite runs on PostgreSQL: keep its stores there too
(closebot_pg_redirect.py). Nothing at all otherwise."""

import os

if os.environ.get("CLOSEBOT_TEST_PG_BASE"):
    # psycopg (and the ctypes.util it loads) first: a test's child may drop to another login,
    # which cannot read this Python's library (tests/test_approvals.py)
    import ctypes.util  # noqa: F401

    import closebot_pg_redirect
    import psycopg  # noqa: F401

    closebot_pg_redirect.install(os.environ["CLOSEBOT_TEST_PG_BASE"])
