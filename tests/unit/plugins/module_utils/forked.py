# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run an edit in a forked child, the one way the file-edit tests (unit and adversarial) do it."""

import multiprocessing
import os

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError

NOBODY = 65534
FORK = multiprocessing.get_context("fork")


def in_child(func, timeout=20, unprivileged=False):
    """Run ``func()`` in a forked child (as nobody when asked); return ("ok", what it returned),
    ("FileEditError", its message) or (another exception's name, its message).  A child that hangs fails
    the test."""
    reader, writer = FORK.Pipe(duplex=False)

    def body():
        try:
            if unprivileged:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            writer.send(("ok", func()))
        except FileEditError as err:
            writer.send(("FileEditError", str(err)))
        except BaseException as err:  # reported to the test, which fails on it
            writer.send((type(err).__name__, str(err)))
        os._exit(0)

    child = FORK.Process(target=body)
    child.start()
    child.join(timeout)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail("the edit hung for %d s" % timeout)
    assert reader.poll(5), "child died with exit code %s" % child.exitcode
    return reader.recv()
