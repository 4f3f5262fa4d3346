# Two commands on a fresh machine: `make sandbox` runs the product, `make test` runs every check.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: sandbox demo auto test test-pg test-fast slow-list lint bench bench-volume bench-ack bench-slack bench-load clean

PORT ?= 8000

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The demo's batch needs one approval (the sample's largest entry is under this limit), so the
# person at the terminal finishes it alone, self-approved; on its own database each time.
DEMO_APPROVAL_LIMIT ?= 10000000
DEMO_DB ?= $(shell mktemp -u /tmp/closebot-demo-XXXXXX.db)

sandbox: $(STAMP)  ## closebot in a Slack-like channel in your browser: no Slack account needed
	$(VENV)/bin/closebot sandbox --port $(PORT)

demo: $(STAMP)  ## a close of the sample period in the terminal, finished by one person
	CLOSEBOT_APPROVAL_LIMIT=$(DEMO_APPROVAL_LIMIT) $(VENV)/bin/closebot run 2026-10 --db $(DEMO_DB)

auto: $(STAMP)  ## the same close, every question answered with its recommendation
	$(VENV)/bin/closebot run 2026-10 --auto

lint: $(STAMP)
	$(VENV)/bin/ruff check bot tests bench
	$(VENV)/bin/ruff format --check bot tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache  # the layers' arrows: pyproject.toml [tool.importlinter]
	$(VENV)/bin/hadolint Dockerfile  # the container image (issue 32)

test: lint  ## lint, type-check and the whole test suite (on SQLite, then on a real PostgreSQL)
	$(VENV)/bin/pytest -q
	$(MAKE) test-pg

# The same tests on a PostgreSQL server they start themselves (tests/pg_backend.py; Debian's
# `postgresql` package, which .ci/run installs): every test not marked `slow`, and the slow
# ones about processes sharing a database (replicas, a kill mid-turn, a held lock). The other
# slow ones (browsers, earlier releases' SQLite files, benches) run on SQLite only, for now.
PG_SLOW := tests/test_two_processes.py tests/test_recovery.py tests/test_busy_and_health.py \
	tests/test_ack_path.py tests/test_approvals.py
test-pg: $(STAMP)  ## the suite on PostgreSQL (CLOSEBOT_TEST_BACKEND=postgresql)
	CLOSEBOT_TEST_BACKEND=postgresql $(VENV)/bin/pytest -q -m "not slow"
	CLOSEBOT_TEST_BACKEND=postgresql $(VENV)/bin/pytest -q $(PG_SLOW)

test-fast: $(STAMP)  ## while editing: ruff and the unit tests (not the `slow` ones), under a minute
	$(VENV)/bin/ruff check bot tests bench
	$(VENV)/bin/pytest -q -m "not slow"

slow-list: $(STAMP)  ## the whole suite, timed, to re-pick which tests test-fast leaves out
	$(VENV)/bin/pytest -q -p no:cacheprovider --durations=0 > $(VENV)/durations.log
	$(PY) -m tests.slow_list $(VENV)/durations.log

bench: bench-volume bench-ack bench-slack bench-load  ## every performance figure beside its target; ten minutes or so

bench-volume: $(STAMP)  ## a month at 2,000 / 20,000 / 200,000 JIB lines vs the csv read (issue 19)
	nice -n 10 $(PY) bench/volume.py

bench-ack: $(STAMP)  ## acks, bursts, model cost, memory of paused runs (issue 11); about five minutes
	$(PY) bench/perf.py

# MANY_CLOSES: the issue's figure is 10,000 /close at once; at most 7,899 periods fit the bench's
# data, and on a shared 2-core machine 2,000 finish in a few minutes (bench/many_closes.py)
MANY_CLOSES ?= 2000

bench-load: $(STAMP)  ## many /close at once: threads and peak RSS; bot time per model step at 990 steps (issue 33)
	$(PY) bench/many_closes.py --count $(MANY_CLOSES)
	$(PY) bench/model_steps.py

bench-slack: $(STAMP)  ## Slack calls per decision by method, and closes at once under every rate tier (issue 27)
	$(PY) bench/slack_budget.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
