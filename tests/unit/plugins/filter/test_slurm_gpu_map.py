# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_gpu_map filter: the GPUs in Slurm's index order, as slurm_gres writes gres.conf."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.slurm_gpu_map import FilterModule, slurm_gpu_map
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_gres import gpu_gres

A100 = [{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a100-%d" % i, "minor_number": 3 - i} for i in range(4)]


def test_order_and_agreement_with_gres_conf():
    mapped = slurm_gpu_map(A100)
    assert [entry["uuid"] for entry in mapped] == ["GPU-a100-3", "GPU-a100-2", "GPU-a100-1", "GPU-a100-0"]
    assert [entry["index"] for entry in mapped] == [0, 1, 2, 3]
    records = gpu_gres(A100)[0]
    assert [entry["file"] for entry in mapped] == [record["File"] for record in records]
    assert FilterModule().filters()["slurm_gpu_map"] is slurm_gpu_map
    assert slurm_gpu_map(None) == []


def test_bad_gpu_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="minor number"):
        slurm_gpu_map([{"name": "x", "uuid": "u"}])
