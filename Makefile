# The two commands of the README: `make run` (the main job) and `make test` (the test suite).
# Each creates the virtual environment, installs the CPU set, and starts the services it needs.
SHELL := /bin/bash
VENV ?= .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed-cpu

.PHONY: run test test-fast lint services install clean-venv

# On a machine without a GPU: the learning proof's treatment, one seed (README, "The main job"). Its
# set-up: the Docker daemon and the base images of its task set (conf/experiment/learning_proof.yaml's,
# or the one ARGS names), nothing the tests need.
RUN_TASK_SET = $(or $(filter task_set=%,$(ARGS)),task_set=write_value)
run: install
	scripts/start_services.sh $(PYTHON) $(RUN_TASK_SET)
	$(PYTHON) -m terminal_rl.train experiment=learning_proof $(ARGS)

# The full suite, CI's command: the lint, the fast tier, then the tests that need the services.
# Two workers, one per core: tests sharing a run stay in one worker (tests/conftest.py). Exit code 5
# is a tier with no test selected (ARGS chose tests of the other tier only). Each tier ends with its
# slowest tests, so CI's log shows where the time goes.
FAST_TIER = not docker and not slurm and not verl and not ray
test: lint
	$(PYTHON) -m pytest -n 2 --dist loadgroup --durations=10 -m "$(FAST_TIER)" $(ARGS) || [ $$? -eq 5 ]
	scripts/start_services.sh $(PYTHON)
	$(PYTHON) -m pytest -n 2 --dist loadgroup --durations=25 -m "not ($(FAST_TIER))" $(ARGS) || [ $$? -eq 5 ]

# Day-to-day: the tests that need no container engine, Slurm, Ray or training (under 2 minutes).
test-fast: install
	$(PYTHON) -m pytest -n 2 --dist loadgroup -m "$(FAST_TIER)" $(ARGS)

# Format and lint check (ruff, configured in pyproject.toml); `ruff format .` applies the format.
lint: install
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

# What the tests need: dockerd and Podman's service (started when none answers), the offline base
# images in both, and a two-node Slurm cluster on this machine.
services: install
	scripts/start_services.sh $(PYTHON)

install: $(INSTALLED)

# The CPU install set: torch's CPU build first, so nothing pulls a CUDA build, then the rest.
$(INSTALLED): pyproject.toml constraints/cpu.txt
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet torch==2.13.0 -c constraints/cpu.txt
	$(PYTHON) -m pip install --quiet -e '.[train,cpu,dev]' -c constraints/cpu.txt
	touch $@

clean-venv:
	rm -rf $(VENV)
