# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift_report callback driven directly: the result objects Ansible hands a callback, faked with what the
callback reads, and the callback itself writing to a report directory (the unit and adversarial tests' one set)."""

from ansible.plugins.loader import callback_loader


class FakeTask:
    def __init__(self, name, action="ansible.builtin.copy", no_log=False):
        self._name = name
        self.action = action
        self.no_log = no_log
        self.tags = []
        self._role = None

    def get_name(self):
        return self._name


class FakeHost:
    def __init__(self, name):
        self._name = name

    def get_name(self):
        return self._name


class FakeResult:
    def __init__(self, task, result, host="head"):
        self._task = task
        self._host = FakeHost(host)
        self._result = result


class FakeStats:
    """The counters of AggregateStats the callback reads: nothing failed, every host reached."""
    failures = {}
    dark = {}


def drift_callback(report_dir, **options):
    """The callback, loaded as Ansible loads it, writing its report to ``report_dir``."""
    callback = callback_loader.get("hpc.gpu_containers.drift_report")
    callback.set_options(direct=dict(report_dir=str(report_dir), **options))
    return callback
