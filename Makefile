# hpc.gpu_containers developer and CI entry points.  `make help` lists them.
#
# Everything runs from the project venv (.venv), built from requirements-dev.txt.
# Nothing here needs a container registry: sanity/units install their own
# venvs from PyPI, the node image is built from Debian packages.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# `make -j test` must still run the steps in the documented order.
.NOTPARALLEL:

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VENV_STAMP := $(VENV)/.requirements-dev.stamp
# Tools run with the venv first on PATH (ansible-lint and molecule call
# ansible-playbook). ANSIBLE_HOME is the checkout's own .ansible: molecule installs
# this collection there and Ansible looks there, so a copy some other run left in
# ~/.ansible/collections can never shadow the code under test.
WITH_VENV := PATH="$(CURDIR)/$(VENV)/bin:$$PATH" VIRTUAL_ENV="$(CURDIR)/$(VENV)" \
	ANSIBLE_HOME="$(CURDIR)/.ansible"
# Two lanes side by side (tools/molecule-lanes.sh), the scenarios of a lane in turn: the default
# scenario, then the registry's explicit insecure mode and bad inputs; beside them a real Slurm with
# Docker jobs as a user across two nodes, then rolling changes on a live LSF cluster (close, drain,
# restart, verify, reopen), then the rootless runtimes (podman, udocker) on a GPU node of their own.
# Every scenario has its own nodes, network and volumes. One scenario: MOLECULE_LANES=slurm; one
# lane of two: MOLECULE_LANES='"default slurm"'. Each lane's output: molecule-lane-<n>.log.
MOLECULE_LANES ?= "default registry_insecure" "slurm rolling rootless"
# Named volumes the scenarios share between their nodes (the LSF_TOP of default and rolling, the
# slurm scenario's /home).
MOLECULE_VOLUMES := hpc-gpu-molecule-lsf-top hpc-slurm-molecule-home hpc-gpu-molecule-roll-lsf-top

# $(call timed,<label>,<command>): run a command and report its wall time.
define timed
start=$$(date +%s); \
if $(2); then echo "make: $(1) took $$(( $$(date +%s) - start ))s"; \
else rc=$$?; echo "make: $(1) FAILED (exit $$rc) after $$(( $$(date +%s) - start ))s" >&2; exit $$rc; fi
endef

.PHONY: help venv lint unit adversarial sanity units image slurm-image molecule demo demo-down bench gpu-check test clean ppc64le

help: ## Show this list
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

venv: $(VENV_STAMP) ## Build .venv from requirements-dev.txt (no-op while the stamp is newer)

$(VENV_STAMP): requirements-dev.txt
	@if [ ! -x "$(VENV)/bin/python" ]; then \
	    [ -n "$(PYTHON)" ] || { echo "make venv: no python3.11/python3 found" >&2; exit 1; }; \
	    echo "make venv: creating $(VENV) with $(PYTHON)"; \
	    $(PYTHON) -m venv "$(VENV)"; \
	fi
	$(VENV)/bin/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(VENV)/bin/python -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	@touch "$@"

lint: venv ## ruff, then ansible-lint --profile production
	@$(call timed,ruff,$(VENV)/bin/ruff check .)
	@$(call timed,ansible-lint,$(WITH_VENV) ansible-lint --profile production)

unit: venv ## pytest tests/unit (no tests collected is a failure)
	@$(call timed,unit,$(VENV)/bin/pytest -q tests/unit)

adversarial: venv ## pytest tests/adversarial: hostile inputs, kill mid-write, concurrency, disk full, secrets
	@$(call timed,adversarial,$(VENV)/bin/pytest -q -rs tests/adversarial)

sanity: venv ## ansible-test sanity --venv --python 3.11 on a copy of the working tree
	@$(call timed,sanity,tools/ansible_test.sh sanity)

units: venv ## ansible-test units --venv --python 3.11 on a copy of the working tree
	@$(call timed,units,tools/ansible_test.sh units)

image: ## Build the test-bed node image from Debian packages (tools/node-image.sh)
	@$(call timed,image,tools/node-image.sh)

slurm-image: ## Build the Slurm test bed's node and MPI job images from Debian packages (tools/slurm-image.sh)
	@$(call timed,slurm-image,tools/slurm-image.sh)

molecule: venv ## molecule test of MOLECULE_LANES (lanes side by side), when a Docker engine answers
	@if docker info >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory image slurm-image && \
	    { rc=0; $(WITH_VENV) tools/molecule-lanes.sh $(MOLECULE_LANES) || rc=$$?; \
	      docker volume rm $(MOLECULE_VOLUMES) >/dev/null 2>&1 || true; exit $$rc; }; \
	else \
	    printf '%s\n' \
	      '##################################################################' \
	      '##  SKIPPED: molecule test -- no Docker engine answers            ##' \
	      '##  (`docker info` failed). Nothing was converged or verified.    ##' \
	      '##################################################################' >&2; \
	    if [ -n "$${MOLECULE_REQUIRED:-}" ]; then echo "make molecule: MOLECULE_REQUIRED is set: failing" >&2; exit 1; fi; \
	fi

# Not part of `test` (CI runs it beside `make test`, .ci/run): 26 minutes on 2
# shared cores, plus 7-9 minutes when the disk image is not cached yet
# (molecule/README.md, "ppc64le").
# Needs root (mmdebstrap --mode=root, binfmt_misc), a Docker engine and
# qemu-system-ppc64; its own ANSIBLE_HOME, so it can run beside `make molecule`.
ppc64le: venv image ## A POWER9 node under qemu beside an x86_64 node: molecule test -s ppc64le
	@docker info >/dev/null 2>&1 || { echo "make ppc64le: FAILED: no Docker engine answers (docker info failed); nothing was run" >&2; exit 1; }
	@[ "$$(id -u)" = 0 ] || { echo "make ppc64le: FAILED: needs root (mmdebstrap --mode=root, binfmt_misc); nothing was run" >&2; exit 1; }
	@command -v qemu-system-ppc64 >/dev/null || { echo "make ppc64le: FAILED: qemu-system-ppc64 is missing: apt-get install qemu-system-ppc (from bookworm-backports where qemu-utils 10 is installed); nothing was run" >&2; exit 1; }
	@$(call timed,ppc64le disk image,nice -n 19 tools/ppc64le-node.sh build)
	@$(call timed,molecule ppc64le,$(WITH_VENV) ANSIBLE_HOME="$(CURDIR)/$(VENV)/.ansible-ppc64le" molecule test -s ppc64le)

demo: venv image ## Start the demo cluster (tools/demo.sh)
	$(WITH_VENV) tools/demo.sh

demo-down: ## Remove the demo cluster (tools/demo-down.sh)
	$(WITH_VENV) tools/demo-down.sh

bench: venv ## Run every benchmark in bench/*.py
	@set -- bench/*.py; [ -e "$$1" ] || { echo "make bench: no bench/*.py" >&2; exit 1; }; \
	for script in "$$@"; do \
	    echo "make bench: $$script"; \
	    $(call timed,$$script,$(VENV)/bin/python "$$script"); \
	done

gpu-check: ## On a machine with a real NVIDIA GPU: record gpu_facts (and a container's view) as a fixture
	$(PYTHON) tools/gpu-check.py

test: lint unit adversarial sanity units molecule ## Everything CI runs, in this order: lint unit adversarial sanity units molecule

clean: ## Remove test output and caches (keeps .venv and the ansible-test venv cache)
	rm -rf tests/output .pytest_cache .ruff_cache .hypothesis
