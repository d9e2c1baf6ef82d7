# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test bed written once: molecule reads .config/molecule/config.yml first and deep-merges each scenario's
molecule.yml over it, so a scenario says only what makes it different, and every node container is started by
the shared create from one options file (molecule/README.md, "One base config, one create")."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / ".config" / "molecule" / "config.yml"
OPTIONS = ROOT / "molecule" / "resources" / "node-container.options"
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))


def _load(path):
    return yaml.safe_load(path.read_text())


def _repeats(scenario, base, path=()):
    """Every key of ``scenario`` whose value is the base's own (a line the scenario need not carry)."""
    out = []
    for key, value in scenario.items():
        if key not in base:
            continue
        if isinstance(value, dict) and isinstance(base[key], dict):
            out += _repeats(value, base[key], path + (key,))
        elif value == base[key]:
            out.append(".".join(path + (key,)))
    return out


def test_every_scenario_is_found():
    assert {"default", "el", "ppc64le", "registry_insecure", "rolling", "rootless", "slurm", "volclava"} <= set(SCENARIOS)


# Run on demand only (molecule/README.md): rolling (the volclava scenario runs its rolling steps on a real
# scheduler) and ppc64le (`make ppc64le`: the emulated POWER9 node would take CI's run past its 90 minutes;
# .ci/run and docs/support-matrix.md say so).
ON_DEMAND = {"rolling", "ppc64le"}


def test_every_other_scenario_runs_in_ci():
    """make test's lanes (MOLECULE_LANES, then MOLECULE_AFTER) run every scenario but the on-demand ones."""
    makefile = (ROOT / "Makefile").read_text()
    lanes = re.search(r"^MOLECULE_LANES \?= (.*)$", makefile, re.M).group(1)
    after = re.search(r"^MOLECULE_AFTER \?= .*,(make:\S+ \S+)\)$", makefile, re.M).group(1)
    steps = {word.split("@")[0] for word in (lanes.replace('"', " ") + " " + after).split()
             if not word.startswith("make:")}
    assert steps == set(SCENARIOS) - ON_DEMAND


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_says_only_what_differs(scenario):
    repeats = _repeats(_load(ROOT / "molecule" / scenario / "molecule.yml"), _load(BASE))
    assert not repeats, "molecule/%s/molecule.yml repeats the base config (%s): %s" % (
        scenario, BASE.relative_to(ROOT), ", ".join(repeats))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_node_containers_have_what_the_shared_create_needs(scenario):
    for platform in _load(ROOT / "molecule" / scenario / "molecule.yml")["platforms"]:
        if platform.get("kind", "container") != "container":
            continue
        assert platform.get("image"), "%s: %s has no image" % (scenario, platform["name"])
        assert platform.get("networks") and platform["networks"][0].get("name"), \
            "%s: %s has no network (the shared create and destroy read its first)" % (scenario, platform["name"])
        assert not {"capabilities", "security_opts", "tmpfs", "command", "privileged"} & set(platform), \
            "%s: %s sets docker driver options; the options of every node are %s" % (
                scenario, platform["name"], OPTIONS.relative_to(ROOT))


def test_the_options_file_is_the_engines_recipe():
    options = [line for line in OPTIONS.read_text().splitlines() if line and not line.startswith("#")]
    # molecule/README.md, "Engine facts": --privileged fails on this engine, every capability but SYS_RESOURCE works.
    assert "--privileged" not in options
    assert {"--cap-add=ALL", "--cap-drop=SYS_RESOURCE", "--cgroupns=host",
            "--volume=/sys/fs/cgroup:/sys/fs/cgroup:rw", "--stop-signal=SIGRTMIN+3"} <= set(options)
    assert all(option.startswith("--") and " " not in option for option in options), options
