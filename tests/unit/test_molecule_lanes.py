"""tools/molecule-lanes.sh, the runner of `make test`'s lanes, against stand-ins for make and molecule.

`make test` hands it the checks as one lane of make:<target> steps beside the molecule scenarios' lanes;
CI's summary (.ci/run) reads the "make: ... took/FAILED/NOT RUN" lines it prints at the end.
"""

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANES = ROOT / "tools" / "molecule-lanes.sh"


def _script(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _run(tmp_path, *lanes):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # make <target>: "ok-*" passes and prints its own timing line as the Makefile's steps do; "bad-*" fails.
    fake_make = _script(tmp_path / "fake-make", """
target="$2"
echo "ran $target" >>"$LANES_RECORD"
case "$target" in
ok-*) echo "make: $target took 1s" ;;
cleanup-*) echo 'fatal: [head]: FAILED! => the reason'; for i in $(seq 40); do echo "removed thing $i"; done; exit 2 ;;
*) echo "something broke in $target" >&2; exit 2 ;;
esac
""")
    _script(bin_dir / "molecule", 'echo "molecule $*" >>"$LANES_RECORD"; echo "molecule $*"\n')
    _script(bin_dir / "ansible", 'echo "ansible [core 2.19.0]"\n')
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), MAKE=str(fake_make),
               LANES_RECORD=str(tmp_path / "record"), MOLECULE_LANES_HOME=str(tmp_path / "home"))
    proc = subprocess.run(["bash", str(LANES), *lanes], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    record = (tmp_path / "record").read_text().splitlines() if (tmp_path / "record").exists() else []
    return proc, record


def test_make_steps_run_in_order_and_their_timings_reach_the_summary(tmp_path):
    proc, record = _run(tmp_path, "make:ok-lint make:ok-unit", "scenario-a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line for line in record if line.startswith("ran")] == ["ran ok-lint", "ran ok-unit"]
    assert "molecule test -s scenario-a" in record
    summary = proc.stdout[proc.stdout.index("molecule lanes:"):]
    assert "make: ok-lint took 1s" in summary.splitlines()
    assert "make: ok-unit took 1s" in summary.splitlines()
    assert any(line.startswith("make: molecule scenario-a took ") for line in summary.splitlines())
    # Each step's output reaches stdout prefixed with its name.
    assert "[ok-lint] make: ok-lint took 1s" in proc.stdout.splitlines()


def test_a_failed_check_fails_the_run_names_why_and_the_steps_it_kept_from_running(tmp_path):
    proc, record = _run(tmp_path, "make:ok-lint make:bad-unit make:ok-sanity", "scenario-a")
    assert proc.returncode == 1
    assert "ran ok-sanity" not in record
    # The other lane still ran to its end.
    assert "molecule test -s scenario-a" in record
    summary = proc.stdout[proc.stdout.index("molecule lanes:"):]
    assert "make: bad-unit FAILED (exit 2)" in summary
    assert "something broke in bad-unit" in summary
    assert "make: ok-sanity NOT RUN (an earlier step of its lane failed)" in summary.splitlines()


def test_a_failed_step_that_cleans_up_after_itself_still_says_why(tmp_path):
    # make first-cluster removes the demo after a failure: its last lines are the clean-up, not the reason.
    proc, _record = _run(tmp_path, "make:cleanup-demo")
    assert proc.returncode == 1
    summary = proc.stdout[proc.stdout.index("molecule lanes:"):]
    assert "fatal: [head]: FAILED! => the reason" in summary
    assert "removed thing 40" in summary
