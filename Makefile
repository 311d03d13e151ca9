# harvest: set up and check everything from a fresh Debian/Ubuntu machine.
#   make run    system packages + .venv, then the desktop app (make run-virtual: on Xvfb;
#               make screenshot: a picture of it there, shot.png)
#   make lint   ruff, mypy --strict and the import contracts (STYLE §20)
#   make test   system packages + .venv, then `make lint` and the test suite

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev

# Paths that exist so far: ruff refuses a path that is not there.
LINT_PATHS := $(wildcard harvest_engine harvest_gui tests examples bench tools)

# Debian packages Qt needs (shared/QT-NOTES.md §1).
# (1) headless tests, QT_QPA_PLATFORM=offscreen: hard NEEDED libraries of Qt and its offscreen plugin.
QT_APT_OFFSCREEN := libglib2.0-0 libegl1 libgl1 libx11-6 libxkbcommon0 libfontconfig1 \
	libfreetype6 libdbus-1-3
# (2) real windows: the xcb platform plugin's libraries and a virtual X server.
QT_APT_XCB := libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 \
	libxcb-render0 libxcb-shape0 libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0 libx11-xcb1 libxcb1 \
	libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb-glx0 xvfb xauth
# (3) make bench counts fdatasync calls with strace (issue 13's commit rows).
BENCH_APT := strace
# (4) the Postgres store's tests: a throwaway server (tests/pg_server.py runs its initdb and pg_ctl).
PG_APT := postgresql
APT_PACKAGES := $(QT_APT_OFFSCREEN) $(QT_APT_XCB) $(BENCH_APT) $(PG_APT)

# The peer engine the benchmarks compare with, in a venv of its own (shared/peers/README.md);
# psycopg is DBOS's Postgres driver (bench/dbos_pg.py runs DBOS on pg_bench's server).
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed-dbos
DBOS_VERSION ?= 3.4.0

.PHONY: venv system-deps lint ruff types contracts test run run-virtual screenshot screenshots bench bench-pg-kill simulate clean distclean

# --- environment --------------------------------------------------------------------------

venv: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstalls only when pyproject.toml changes; delete the stamp to force it.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# Installs only the packages that are missing, so it is a fast no-op on a set-up machine.
# Debian's own python3 also needs python3-venv for `python3 -m venv`.
system-deps:
	@command -v dpkg-query >/dev/null 2>&1 || { echo "system-deps: not a Debian/Ubuntu system; install Qt's libraries as shared/QT-NOTES.md lists"; exit 0; }; \
	missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if ! $(PYTHON) -c 'import ensurepip' >/dev/null 2>&1; then missing="$$missing python3-venv"; fi; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	else echo "system-deps: need root or sudo to install:$$missing" >&2; exit 1; fi; \
	echo "system-deps: installing$$missing"; \
	$$sudo apt-get update -qq && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null

# --- checks -------------------------------------------------------------------------------

# One target for every static check (STYLE §20); each is configured in pyproject.toml.
lint: ruff types contracts

ruff: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# mypy --strict over harvest_engine and harvest_gui ([tool.mypy] files and strict).
types: venv
	$(BIN)/mypy

contracts: venv
	$(BIN)/lint-imports --no-cache

# GUI tests run offscreen; pytest-xdist and pytest-qt work together (one QApplication per worker).
# The slow payload property takes 10,000 examples alone (pytest -m slow), 1,000 here.
test: system-deps venv lint
	HARVEST_PAYLOAD_EXAMPLES=1000 QT_QPA_PLATFORM=offscreen $(BIN)/pytest -n 2 -q

# --- running ------------------------------------------------------------------------------

# With no display (SSH, a container, CI) the app says so and how to see it, and exits 2.
run: system-deps venv
	$(BIN)/harvest-gui

# The app on a virtual 1366x768 X screen: nothing is visible; it prints the command that
# pictures it from another terminal (tools/grab_screen.py: the display and its XAUTHORITY).
run-virtual: system-deps venv
	xvfb-run -a -s "-screen 0 1366x768x24" sh -c 'echo "harvest-gui runs on the virtual display $$DISPLAY (invisible). Stop: Ctrl+C."; \
	echo "Picture it from another terminal:"; $(BIN)/python -m tools.grab_screen --how shot.png; \
	QT_QPA_PLATFORM=xcb exec $(BIN)/harvest-gui'

# The app on the same virtual screen, pictured once it is drawn (SHOT=shot.png), then stopped.
SHOT ?= shot.png
screenshot: system-deps venv
	xvfb-run -a -s "-screen 0 1366x768x24" sh -c 'QT_QPA_PLATFORM=xcb $(BIN)/harvest-gui & app=$$!; \
	QT_QPA_PLATFORM=xcb $(BIN)/python -m tools.grab_screen --wait 30 "$(SHOT)"; status=$$?; \
	kill $$app; wait $$app; exit $$status'

screenshots: system-deps venv
	xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb $(BIN)/python -m tools.screenshots resources/screenshots
	xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb $(BIN)/python -m tools.screenshots_part2 resources/screenshots
	xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb $(BIN)/python -m tools.screenshots_part3 resources/screenshots
	xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb $(BIN)/python -m tools.screenshots_part4 resources/screenshots

# Prints every benchmark row; issue 13's rows beside DBOS from the same run
# (bench/peers_bench.py: PEERS_DIR, default ../shared/peers, holds bench_dbos.py).
bench: system-deps venv $(PEERS_STAMP)
	PEERS_PYTHON=$(CURDIR)/$(PEERS_VENV)/bin/python $(BIN)/python -m bench

# Issue 14's kill campaign: SIGKILL one of three Postgres workers 60 times under load
# (a few minutes); writes its section of bench/RESULTS.md and fails if a target is missed.
bench-pg-kill: system-deps venv
	$(BIN)/python -m bench.pg_kill_campaign --kills 60 --lease 2 --record

# Issue 30's campaign: 10,000 seeds of the deterministic simulation (make test runs 200 of them);
# one seed again with its trace: $(BIN)/python -m bench.simulate --seed N
SEEDS ?= 10000
simulate: venv
	$(BIN)/python -m bench.simulate --seeds $(SEEDS)

$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet 'dbos==$(DBOS_VERSION)' 'psycopg[binary]'
	touch $@

# --- cleaning -----------------------------------------------------------------------------

# Build output and caches; `make distclean` also removes .venv.
clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(PEERS_VENV)
