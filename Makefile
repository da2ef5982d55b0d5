# The README's two commands: `make preview` (the main job, offline) and `make test`.
# Each creates its own virtualenv on a fresh machine, from the hashed lockfile.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --quiet --disable-pip-version-check
STACK ?= prod
LOCK_FLAGS := --quiet --generate-hashes --allow-unsafe --strip-extras --all-build-deps \
	--no-emit-index-url --no-emit-find-links

.PHONY: venv lock preview render test lint format bench completion tools checkov example \
	docs mutate mutate-changed clean
CHECKOV := .ci/checkov-venv/bin/checkov
STACKS := $(patsubst Pulumi.%.yaml,%,$(wildcard Pulumi.*.yaml))

venv: $(VENV)/.installed

## Every package at the version and hash requirements-dev.lock names (the build backend
## included, so the project itself is built without fetching anything unpinned).
$(VENV)/.installed: pyproject.toml requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --require-hashes --no-deps -r requirements-dev.lock
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

## Re-resolve both lockfiles from pyproject.toml (UPGRADE=--upgrade for newer releases).
lock: venv
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) $(UPGRADE) -o requirements.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) $(UPGRADE) --extra dev -o requirements-dev.lock \
		pyproject.toml

## The main job: what the next ladder step would change on STACK, offline (no cluster, no CLI).
preview: venv
	$(PY) -m dualstack preview --stack $(STACK) --next

## Every Kubernetes object of STACK as YAML.
render: venv
	$(PY) -m dualstack render --stack $(STACK)

## External tools the tests drive for real (promtool, prometheus, pushgateway, checkov).
tools:
	bash .ci/install-tools

test: venv tools
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory checkov
	$(MAKE) --no-print-directory example

## checkov (.checkov.yaml) over the render of every committed stack and of the example fleet
## (examples/fleet): no failure outside the config's justified skips.
checkov: venv tools
	rm -rf out/checkov
	for stack in $(STACKS); do \
	  $(PY) -m dualstack render --stack $$stack --output out/checkov/$$stack >/dev/null || exit 2; \
	done
	$(PY) -m dualstack -C examples/fleet render --stack fleet --output out/checkov/example-fleet \
	  >/dev/null || exit 2
	$(CHECKOV) --config-file .checkov.yaml --quiet -d out/checkov

## The example fleet stack rendered and previewed offline, every policy judging it (exit 1 on
## a mandatory violation): .ci/example-fleet, output in out/example-fleet.
example: venv
	PY=$(PY) bash .ci/example-fleet out/example-fleet

## The docs site (mkdocs.yml): regenerate what is generated from the code (docs/reference/ by
## dualstack/docs_gen.py; "Your first rung" in README.md and docs/first-rung.md by running its
## commands on a fixture repo, tests/docs/first_rung.py), then build the site into out/site.
## `make test` fails while a generated page is out of date (tests/docs/) and builds the site.
docs: venv tools
	$(PY) -m dualstack.docs_gen
	$(PY) -m tests.docs.first_rung
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

## Shell completion scripts: completion/dualstack.bash and completion/_dualstack (zsh).
completion: venv
	mkdir -p completion
	$(VENV)/bin/dualstack completion bash > completion/dualstack.bash
	$(VENV)/bin/dualstack completion zsh > completion/_dualstack

## Speed figures quoted in the issue notes.
bench: venv tools
	$(PY) -m pytest -q -p no:randomly --benchmark-enable -m benchmark tests

## Mutation testing of the safety logic ([tool.mutmut] in pyproject.toml), from scratch: the
## kill rate per module; fails when a mutant not recorded in tests/mutation/equivalent.yaml lives.
mutate: venv tools
	$(PY) .ci/mutate --all

## The CI job: only the listed modules changed against the default branch (else a small set).
mutate-changed: venv tools
	$(PY) .ci/mutate --changed

clean:
	rm -rf $(VENV) .ci/checkov-venv .pytest_cache .benchmarks build *.egg-info out/checkov \
		out/example-fleet \
		completion mutants
