# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.hpc.gpu_containers`` importable for plain pytest.

Under ``ansible-test units`` the collection loader is already installed and this
does nothing.  Under plain ``pytest tests/unit`` it links the checkout into a
temporary ``ansible_collections/<namespace>/<name>`` tree and installs Ansible's
collection finder on it, the way ansible-test would.  It lives in tests/unit and
not in the repository root: a root conftest makes ``ansible-test units`` run no
tests and still exit 0.

ansible-test also runs module tests and controller tests (callbacks, filters) in
separate processes.  Plain pytest runs them in one, and importing controller code
flips ansible-core's process-wide "this is the controller" switch, after which
``module.warn()`` goes to the display instead of the module result.  Module
warnings and deprecations also live in process-wide lists that a real module
process never carries over.  The ``_module_side`` fixture puts the switch back and
empties those lists for every module and module_utils test.
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import settings as hypothesis_settings

try:  # ansible-core 2.19 and later; 2.16-2.18 have no controller switch to put back
    from ansible.module_utils import _internal as module_utils_internal
except ImportError:
    module_utils_internal = None
from ansible.module_utils.common import warnings as module_warnings
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = Path(__file__).resolve().parents[2]

# The property tests assert what an edit does, not how fast: no per-example deadline (Hypothesis' default is
# 200 ms), which a test of the LSF container grammar exceeded on a loaded machine (381 ms). Speed is
# bench/'s to measure.
hypothesis_settings.register_profile("hpc.gpu_containers", deadline=None)
hypothesis_settings.load_profile("hpc.gpu_containers")


def _backport_patch_module_args():
    """``ansible.module_utils.testing.patch_module_args`` for ansible-core before 2.19, which lacks it.

    The module tests import it from there; on an older core (the oldest the collection supports runs
    them too: ``make units-oldest``) the same context manager is registered under that name, doing what
    the older cores' own tests did: put the arguments where ``AnsibleModule`` reads them.
    """
    try:
        import ansible.module_utils.testing  # noqa: F401  (2.19 and later)
        return
    except ImportError:
        pass
    import contextlib
    import json
    import types
    from unittest import mock

    from ansible.module_utils import basic

    @contextlib.contextmanager
    def patch_module_args(args=None):
        if not isinstance(args, (dict, type(None))):
            raise TypeError("The `args` arg must be a dict or None.")
        data = json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode()
        with mock.patch.object(basic, "_ANSIBLE_ARGS", data):
            yield

    module = types.ModuleType("ansible.module_utils.testing")
    module.patch_module_args = patch_module_args
    sys.modules[module.__name__] = module


_backport_patch_module_args()


def _install_collection_loader():
    if AnsibleCollectionConfig.collection_finder is not None:
        return  # ansible-test has installed its loader already
    meta = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
    base = Path(tempfile.mkdtemp(prefix="coll-"))
    atexit.register(shutil.rmtree, base, True)  # removes the link, never the checkout
    namespace_dir = base / "ansible_collections" / meta["namespace"]
    namespace_dir.mkdir(parents=True)
    (namespace_dir / meta["name"]).symlink_to(ROOT)
    os.environ["ANSIBLE_COLLECTIONS_PATH"] = str(base)
    # The 'ansible' package bundle ships its own ansible_collections namespace;
    # drop anything already imported from it so the finder below takes over.
    for name in [m for m in sys.modules if m.split(".")[0] == "ansible_collections"]:
        del sys.modules[name]
    _AnsibleCollectionFinder(paths=[str(base)])._install()


_install_collection_loader()


# Test directories whose code runs on the managed node (ansible-test's "modules"
# and "module_utils" unit-test groups); everything else is controller code.
_MODULE_SIDE_DIRS = (
    ROOT / "tests" / "unit" / "plugins" / "modules",
    ROOT / "tests" / "unit" / "plugins" / "module_utils",
)


@pytest.fixture(autouse=True)
def _module_side(request, monkeypatch):
    path = Path(str(request.node.path)).resolve()
    if any(directory in path.parents for directory in _MODULE_SIDE_DIRS):
        if module_utils_internal is not None:
            monkeypatch.setattr(module_utils_internal, "is_controller", False)
        # Dicts in ansible-core 2.19, lists before it.
        for name in ("_global_warnings", "_global_deprecations"):
            monkeypatch.setattr(module_warnings, name, type(getattr(module_warnings, name))())
