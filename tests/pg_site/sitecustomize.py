"""In a process a test started while the suite runs on PostgreSQL: keep its stores there too
(closebot_pg_redirect.py). Nothing at all otherwise."""

import os

if os.environ.get("CLOSEBOT_TEST_PG_BASE"):
    import closebot_pg_redirect

    closebot_pg_redirect.install(os.environ["CLOSEBOT_TEST_PG_BASE"])
