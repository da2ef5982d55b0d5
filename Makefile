# The README's two commands: `make preview` (the main job, offline) and `make test`.
# Each creates its own virtualenv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= prod

.PHONY: venv preview render test lint format bench tools clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

## The main job: what the next ladder step would change on STACK, offline (no cluster, no CLI).
preview: venv
	$(PY) -m dualstack preview --stack $(STACK) --next

## Every Kubernetes object of STACK as YAML.
render: venv
	$(PY) -m dualstack render --stack $(STACK)

## External tools the tests drive for real (promtool, prometheus, pushgateway).
tools:
	bash .ci/install-tools

test: venv tools
	$(PY) -m pytest -q

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

## Speed figures quoted in the issue notes.
bench: venv tools
	$(PY) -m pytest -q -p no:randomly --benchmark-enable -m benchmark tests

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks build *.egg-info
