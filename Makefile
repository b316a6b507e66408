# PAI Portal: `make run` sets everything up and serves the portal plus the scheduler;
# `make test` sets up and runs the whole test suite; `make fast` the fast tier while working.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: run test fast setup venv image image-training image-notebook static lint clean assets bench-quick docs

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	bash scripts/ensure-build-deps.sh $(VENV)/bin/python  # python-ldap builds from source
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

static: venv
	$(PY) manage.py collectstatic --noinput -v0

setup: venv static
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py createcachetable
	$(PY) manage.py bootstrap

run: setup site/index.html
	$(VENV)/bin/honcho start -f Procfile

# The documentation site (docs/, mkdocs.yml) into site/, which the portal serves at /docs/: the
# reference pages written from the code first, then a build that fails on any warning (a broken
# link or anchor included), then a check that no page fetches anything off-site.
docs: venv
	$(PY) docs/gen/reference.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	$(PY) docs/gen/offline.py

# `make run` builds the site once when it is absent; `make docs` builds it again.
site/index.html:
	$(MAKE) docs

test: venv static
	$(PY) -m pytest $(PYTEST_ARGS)

# The fast tier: no Docker, no browser, nothing slow or Slurm (pyproject.toml's markers), on
# FAST_WORKERS processes (pytest-xdist; auto: one per CPU; FAST_WORKERS=0 runs it in this one).
# Prints its wall time. Compiled modules are cached even where PYTHONDONTWRITEBYTECODE
# says not to: compiling them again took a tenth of the tier's CPU.
# Its tmp_path folders go in a folder of this checkout's own (FAST_TMP), emptied while the tests
# run: by default pytest ends each session deleting the oldest of the box's numbered folders,
# whoever's run made it (~6,000 entries after a tier), on the tests' time; on this box's disk
# (ext4 with discard) that took 1.5 s quiet and ~17 s under other sessions' load.
FAST_MARKERS := not docker and not browser and not slow and not slurm
FAST_WORKERS ?= auto
FAST_TMP ?= $${TMPDIR:-/tmp}/pai-fast-$$(id -u)-$$(printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)
fast: venv
	@start=$$(date +%s%N); tmp=$(FAST_TMP); emptied=; \
	if [ -d "$$tmp" ] && mv "$$tmp" "$$tmp.old.$$$$"; then rm -rf "$$tmp.old.$$$$" & emptied=$$!; fi; \
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m "$(FAST_MARKERS)" -n $(FAST_WORKERS) --basetemp="$$tmp" $(PYTEST_ARGS); status=$$?; \
	if [ -n "$$emptied" ]; then wait $$emptied; fi; \
	ms=$$(( ($$(date +%s%N) - start) / 1000000 )); \
	echo "make fast: $$((ms / 1000)).$$((ms % 1000 / 100)) s wall"; exit $$status

# The headline benchmarks, small (a few minutes: throughput beside Slurm, the REST API beside
# sbatch, the scheduler at scale), each figure beside the one recorded in docs/performance.md
# ("The quick check"); a drop over 20 % is flagged and fails it. Wall times mean something only on
# a quiet machine; the CPU figures less so. BENCH_ARGS="--record" writes the figures down.
bench-quick: venv
	$(PY) bench/quick.py $(BENCH_ARGS)

# The base image pai-portal/base:latest, built offline (tarball cached in var/cache/).
image:
	bash scripts/build-base-image.sh

# The distributed-training image (PyTorch and OpenMPI from Debian): the tests build it when absent.
image-training:
	bash scripts/build-base-image.sh training

# The interactive image (Debian's Jupyter Notebook) for the jupyter plugin: the tests build it when absent.
image-notebook:
	bash scripts/build-base-image.sh notebook

# What CI checks before any test: lint, formatting, types, and no model change without its migration.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) manage.py catalogue --check

clean:
	rm -rf $(VENV) var/static site

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
