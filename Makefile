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

# The venvs' interpreter: the distribution's own python3.11 first (Debian 12's, built with profile-guided and
# link-time optimisation), where its venv module can bootstrap pip (Debian's python3-venv), then the first
# python3.11 or python3 on PATH. A plain source build of the same 3.11 (a version manager's default) spent
# 17-22 % more CPU on the same ansible-playbook and pytest runs, measured side by side on CI's machine kind:
# every controller-side step of CI is CPU-bound.
PYTHON ?= $(shell for p in /usr/bin/python3.11 python3.11 python3; do \
	command -v "$$p" >/dev/null 2>&1 && "$$p" -c 'import ensurepip, venv' >/dev/null 2>&1 && { command -v "$$p"; break; }; \
	done)
VENV := .venv
VENV_STAMP := $(VENV)/.requirements-dev.stamp
# The oldest ansible-core the collection supports (meta/runtime.yml requires_ansible), from
# requirements-oldest.txt: sanity-oldest, units-oldest and the molecule scenarios named <scenario>@oldest
# run under it.
VENV_OLDEST := $(VENV)/oldest
VENV_OLDEST_STAMP := $(VENV_OLDEST)/.requirements-oldest.stamp
# Tools run with the venv first on PATH (ansible-lint and molecule call
# ansible-playbook). ANSIBLE_HOME is the checkout's own .ansible: molecule installs
# this collection there and Ansible looks there, so a copy some other run left in
# ~/.ansible/collections can never shadow the code under test.
WITH_VENV := PATH="$(CURDIR)/$(VENV)/bin:$$PATH" VIRTUAL_ENV="$(CURDIR)/$(VENV)" \
	ANSIBLE_HOME="$(CURDIR)/.ansible"
# Three lanes side by side (tools/molecule-lanes.sh), the scenarios of a lane in turn: the default
# scenario alone (the longest); a real Slurm with Docker jobs as a user across two nodes, then the
# registry's explicit insecure mode and bad inputs under the oldest supported ansible-core (every other
# scenario runs under the newest, which covers the registry role's tasks; running registry_insecure twice
# cost CI about 10 minutes), then the rootless runtimes (podman, udocker) on a GPU node of their own; the
# volclava node image, then a real LSF-family cluster (volclava) with rolling changes on it (close, drain a
# user's job, restart, verify, reopen), whose side effect alone took 47 minutes of CI's run. The Slurm node
# image (slurm and rootless run on it) is built in the lane that uses it (make:slurm-image), not before every
# lane starts; `make molecule` builds it first only when MOLECULE_LANES does not. A fourth lane: `make test`'s
# checks (CHECKS below), then MOLECULE_AFTER (the EL package path on a stand-in userland).
# Not in `make test`: `rolling`, the same rolling changes on LSF stubs with LSF 10.1's application profile
# (the verification job through `bsub -app` after the reopen); MOLECULE_LANES=rolling runs it.
# Every scenario has its own nodes, network and volumes. One scenario: MOLECULE_LANES=slurm; one
# lane of two: MOLECULE_LANES='"default slurm"'; the EL scenario: MOLECULE_LANES='"make:el-image el"'.
# Each lane's output: molecule-lane-<n>.log.
# <scenario>@oldest runs a scenario under the oldest supported ansible-core (.venv/oldest).
MOLECULE_LANES ?= "default" "make:slurm-image slurm registry_insecure@oldest rootless" "make:volclava-image volclava"

# $(call timed,<label>,<command>): run a command and report its wall time.
define timed
start=$$(date +%s); \
if $(2); then echo "make: $(1) took $$(( $$(date +%s) - start ))s"; \
else rc=$$?; echo "make: $(1) FAILED (exit $$rc) after $$(( $$(date +%s) - start ))s" >&2; exit $$rc; fi
endef

# $(call build_venv,<target>,<venv directory>,<requirements file>): create the venv if it is missing, install
# the requirements into it, touch the target's stamp.
define build_venv
if [ ! -x "$(2)/bin/python" ]; then \
    [ -n "$(PYTHON)" ] || { echo "make $(1): no python3.11/python3 found" >&2; exit 1; }; \
    echo "make $(1): creating $(2) with $(PYTHON)"; \
    $(PYTHON) -m venv "$(2)"; \
fi; \
echo "make $(1): installing $(3) into $(2)"; \
"$(2)/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip; \
"$(2)/bin/python" -m pip install --disable-pip-version-check -q -r "$(3)"; \
touch "$@"
endef

.PHONY: help checks venv venv-oldest sanity-oldest units-oldest lint unit adversarial sanity units image slurm-image el-image volclava-image molecule demo demo-down bench gpu-check test clean ppc64le ppc64le-disk

help: ## Show this list
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

venv: $(VENV_STAMP) ## Build .venv from requirements-dev.txt (no-op while the stamp is newer)

$(VENV_STAMP): requirements-dev.txt
	@$(call build_venv,venv,$(VENV),requirements-dev.txt)

venv-oldest: $(VENV_OLDEST_STAMP) ## Build .venv/oldest (the oldest supported ansible-core) from requirements-oldest.txt

$(VENV_OLDEST_STAMP): requirements-oldest.txt
	@$(call build_venv,venv-oldest,$(VENV_OLDEST),requirements-oldest.txt)

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

# Under the oldest core, every sanity test but pylint: the newest core's pylint (sanity) is the style check of
# the code; the oldest core's older pylint checks style, not compatibility (validate-modules, import, compile and
# ansible-doc do that), and it is the slowest of them.
sanity-oldest: venv-oldest ## ansible-test sanity under the oldest supported ansible-core (.venv/oldest), pylint left to sanity
	@$(call timed,sanity-oldest,ANSIBLE_CORE=oldest tools/ansible_test.sh sanity --skip-test pylint)

# Under the oldest core, the unit tests of the code that meets Ansible's interfaces: modules, filters, callbacks,
# lookups, roles, playbooks, site templates, the modules' side of the models (tests/unit/plugins/module_utils files
# that import Ansible or a plugin). Left out: the models' own tests that import neither (pure Python: the same code
# on the same interpreter under either core, run by `make units`) and the test bed's (tests/unit/testbed).
UNITS_PURE_MODEL_TESTS = $(shell grep -L -E '^\s*(from|import) ansible[. ]|plugins\.(modules|filter|callback|lookup)\b|module_runner' \
	tests/unit/plugins/module_utils/test_*.py)
UNITS_OLDEST_TARGETS = $(filter-out $(UNITS_PURE_MODEL_TESTS),$(shell find tests/unit -name 'test_*.py' -not -path 'tests/unit/testbed/*' | sort))

units-oldest: venv-oldest ## ansible-test units under the oldest supported ansible-core (.venv/oldest), the models' pure-Python tests left to units
	@$(call timed,units-oldest,ANSIBLE_CORE=oldest tools/ansible_test.sh units $(UNITS_OLDEST_TARGETS))

image: ## Build the test-bed node image from Debian packages (tools/node-image.sh)
	@$(call timed,image,tools/node-image.sh)

el-image: image ## Build the EL stand-in node image and the site mirrors it installs from (molecule/resources/el-standin)
	@$(call timed,el-image,molecule/resources/el-standin/build.sh >/dev/null)

slurm-image: ## Build the Slurm test bed's node and MPI job images from Debian packages (tools/slurm-image.sh)
	@$(call timed,slurm-image,tools/slurm-image.sh)

# The volclava scenario's node image (molecule/resources/volclava/README.md); its lane builds it first.
volclava-image: ## Build the LSF-family node image: volclava from molecule/resources/volclava (tools/volclava-image.sh)
	@$(call timed,volclava-image,tools/volclava-image.sh)

# The steps of a lane `make molecule` runs beside MOLECULE_LANES: none by default; `make test` hands it the
# checks (CHECKS below) as make:<target> steps.
MOLECULE_BESIDE ?=
# Steps that follow MOLECULE_BESIDE in its lane when a Docker engine answers (a lane of their own when it is
# empty): the EL scenario after its node image, where the checks leave the most time beside the scenarios.
# Only with the default MOLECULE_LANES: lanes given on the command line run alone. CI (.ci/run) adds
# make:awx-slices and make:first-cluster here (the second on the demo nodes the first brought up).
MOLECULE_AFTER ?= $(if $(filter file,$(origin MOLECULE_LANES)),make:el-image el)

molecule: venv $(if $(findstring @oldest,$(MOLECULE_LANES)),venv-oldest) ## molecule test of MOLECULE_LANES (lanes side by side), when a Docker engine answers
	@if docker info >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory image $(if $(findstring make:slurm-image,$(MOLECULE_LANES)),,slurm-image) && \
	    $(WITH_VENV) tools/molecule-lanes.sh \
	        $(if $(strip $(MOLECULE_BESIDE) $(MOLECULE_AFTER)),"$(strip $(MOLECULE_BESIDE) $(MOLECULE_AFTER))") $(MOLECULE_LANES); \
	else \
	    printf '%s\n' \
	      '##################################################################' \
	      '##  SKIPPED: molecule test -- no Docker engine answers            ##' \
	      '##  (`docker info` failed). Nothing was converged or verified.    ##' \
	      '##################################################################' >&2; \
	    if [ -n "$${MOLECULE_REQUIRED:-}" ]; then echo "make molecule: MOLECULE_REQUIRED is set: failing" >&2; exit 1; fi; \
	    $(if $(strip $(MOLECULE_BESIDE)),$(WITH_VENV) tools/molecule-lanes.sh "$(strip $(MOLECULE_BESIDE))",true); \
	fi

# Not part of `test`, nor of CI's run (.ci/run says why): about an hour on 2 shared cores beside `make test`,
# plus 16 minutes when the disk image is not cached yet (molecule/README.md, "ppc64le").
# Needs root (mmdebstrap --mode=root, binfmt_misc), a Docker engine and
# qemu-system-ppc64; its own ANSIBLE_HOME, so it can run beside `make molecule`.
ppc64le: venv image ppc64le-disk ## A POWER9 node under qemu beside an x86_64 node: molecule test -s ppc64le
	@docker info >/dev/null 2>&1 || { echo "make ppc64le: FAILED: no Docker engine answers (docker info failed); nothing was run" >&2; exit 1; }
	@$(call timed,molecule ppc64le,$(WITH_VENV) ANSIBLE_HOME="$(CURDIR)/$(VENV)/.ansible-ppc64le" molecule test -s ppc64le)

# Needs neither venv nor node image: it can be built beside them.
ppc64le-disk: ## Build (or find cached) the ppc64le node's disk image (tools/ppc64le-node.sh build)
	@[ "$$(id -u)" = 0 ] || { echo "make ppc64le-disk: FAILED: needs root (mmdebstrap --mode=root, binfmt_misc); nothing was run" >&2; exit 1; }
	@command -v qemu-system-ppc64 >/dev/null || { echo "make ppc64le-disk: FAILED: qemu-system-ppc64 is missing: apt-get install qemu-system-ppc (from bookworm-backports where qemu-utils 10 is installed); nothing was run" >&2; exit 1; }
	@$(call timed,ppc64le disk image,tools/ppc64le-node.sh build)

demo: venv image ## Start the demo cluster (tools/demo.sh)
	$(WITH_VENV) tools/demo.sh

demo-down: ## Remove the demo cluster (tools/demo-down.sh)
	$(WITH_VENV) tools/demo-down.sh

# The README's "Your first real cluster" steps, as written, against the demo nodes: make demo when
# they are not all running, then tools/first-cluster.sh, then make demo-down (also after a failure, of the
# demo too: a half-made demo left running would be taken for a ready one by the next run). The demo's own
# verify.yml is left out here (DEMO_SKIP_VERIFY=1): the steps run the same playbook on the same nodes after
# their converge, and the demo's converge still runs its verification containers and must pass.
.PHONY: first-cluster
first-cluster: venv ## The README's first-cluster steps against the demo nodes (tools/first-cluster.sh)
	@rc=0; for node in head gpu01 gpu02; do \
	    [ "$$(docker container inspect -f '{{.State.Running}}' demo-$$node 2>/dev/null)" = true ] || up=no; \
	done; \
	if [ "$${up:-yes}" = no ]; then ( $(call timed,demo,DEMO_SKIP_VERIFY=1 $(MAKE) --no-print-directory demo) ) || rc=$$?; fi; \
	if [ "$$rc" -eq 0 ]; then ( $(call timed,first-cluster,$(WITH_VENV) tools/first-cluster.sh) ) || rc=$$?; fi; \
	$(MAKE) --no-print-directory demo-down; exit $$rc

# AWX's job slicing on the demo nodes (tools/awx-slices-demo.sh, docs/scale.md): make demo when they are not all
# running, then the drift check of the whole inventory and the same check as AWX's sliced jobs run it (ansible-runner),
# joined and compared. The demo stays up when it passed (CI's run goes on with make first-cluster on it; make
# demo-down removes it) and is removed when it failed, as make first-cluster does.
.PHONY: awx-slices
awx-slices: venv ## The drift check as AWX's sliced jobs run it, joined and compared with the unsliced check (demo nodes)
	@rc=0; for node in head gpu01 gpu02; do \
	    [ "$$(docker container inspect -f '{{.State.Running}}' demo-$$node 2>/dev/null)" = true ] || up=no; \
	done; \
	if [ "$${up:-yes}" = no ]; then ( $(call timed,demo,DEMO_SKIP_VERIFY=1 $(MAKE) --no-print-directory demo) ) || rc=$$?; fi; \
	if [ "$$rc" -eq 0 ]; then ( $(call timed,awx-slices,$(WITH_VENV) tools/awx-slices-demo.sh) ) || rc=$$?; fi; \
	if [ "$$rc" -ne 0 ]; then $(MAKE) --no-print-directory demo-down; fi; exit $$rc

bench: venv ## Run every benchmark in bench/*.py
	@set -- bench/[!_]*.py; [ -e "$$1" ] || { echo "make bench: no bench/*.py" >&2; exit 1; }; \
	for script in "$$@"; do \
	    echo "make bench: $$script"; \
	    $(call timed,$$script,$(VENV)/bin/python "$$script"); \
	done

gpu-check: ## On a machine with a real NVIDIA GPU: record gpu_facts (and a container's view) as a fixture
	$(PYTHON) tools/gpu-check.py

# The checks that need no Docker engine, one after the other in this order.
# `unit` is not among them: `units` runs the same tests/unit suite through ansible-test (each test in its own
# isolated environment), and `units-oldest` again under the oldest ansible-core; `make unit` is the quick local
# run of it.
CHECKS := lint adversarial sanity units sanity-oldest units-oldest

checks: $(CHECKS) ## lint adversarial sanity units sanity-oldest units-oldest, one after the other

# `make test` runs the checks as one lane beside the molecule lanes (tools/molecule-lanes.sh): the checks
# are mostly CPU, the scenarios mostly wait on their nodes, so side by side they take about as long as
# the longest lane instead of the sum. A failed check fails `make test`; the lanes still run to their end.
test: venv venv-oldest ## Everything CI runs: the checks (lint ... units-oldest) in one lane beside the molecule lanes
	@$(MAKE) --no-print-directory molecule MOLECULE_BESIDE='$(addprefix make:,$(CHECKS))'

clean: ## Remove test output and caches (keeps .venv and the ansible-test venv cache)
	rm -rf tests/output .pytest_cache .ruff_cache .hypothesis
