# PAI Portal: `make run` sets everything up and serves the portal plus the scheduler;
# `make test` sets up and runs the whole test suite.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: run test setup venv image static lint clean assets

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

static: venv
	$(PY) manage.py collectstatic --noinput -v0

setup: venv static
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py createcachetable
	$(PY) manage.py bootstrap

run: setup
	$(VENV)/bin/honcho start -f Procfile

test: venv static
	$(PY) -m pytest $(PYTEST_ARGS)

# The base image pai-portal/base:latest, built offline (tarball cached in var/cache/).
image:
	bash scripts/build-base-image.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy .

clean:
	rm -rf $(VENV) var/static

# Browser assets (xterm.js, uPlot) are committed under static/vendor/ (CI needs no npm); this
# refreshes them from the versions pinned in package.json.
assets:
	npm ci --no-audit --no-fund
	mkdir -p static/vendor/xterm
	cp node_modules/@xterm/xterm/lib/xterm.js node_modules/@xterm/xterm/css/xterm.css \
	   node_modules/@xterm/xterm/LICENSE node_modules/@xterm/addon-fit/lib/addon-fit.js static/vendor/xterm/
	sed -i '/sourceMappingURL=/d' static/vendor/xterm/xterm.js static/vendor/xterm/addon-fit.js
	mkdir -p static/vendor/uplot
	cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css node_modules/uplot/LICENSE static/vendor/uplot/
