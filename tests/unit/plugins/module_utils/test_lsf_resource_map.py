# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static values per host in lsf.cluster's ResourceMap (module_utils/_lsf_resource_map.py), on published files."""

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_resource_map import (
    edit_resource_map,
    parse_location,
    render_location,
)

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "lsf_samples"
CLUSTER_FILES = sorted(p.name for p in SAMPLES.glob("*lsf.cluster.*") if not p.name.endswith(".erb"))


@pytest.mark.parametrize("name", CLUSTER_FILES)
def test_set_then_remove_gives_the_file_back(name):
    text = (SAMPLES / name).read_text()
    assert edit_resource_map(text, {}) == (text, [], [])
    added, changed, _warnings = edit_resource_map(text, {"cuda_version": {"gpu01": 12020, "gpu02": 11080}})
    assert changed == ["cuda_version"] and "(12020@[gpu01] 11080@[gpu02])" in added
    removed, changed, _warnings = edit_resource_map(added, {}, {"cuda_version": ["GPU01", "gpu02"]})
    assert changed == ["cuda_version"]
    if "\nBegin ResourceMap" in text:
        assert removed == text
    else:
        # The section it added stays, empty.
        assert removed.replace("\nBegin ResourceMap\nRESOURCENAME  LOCATION\nEnd ResourceMap\n", "", 1) == text


def test_locations():
    assert parse_location("(4@[a b] 3@[c])") == [("4", ["a", "b"]), ("3", ["c"])]
    assert render_location([("4", ["a", "b"]), ("3", ["c"])]) == "(4@[a b] 3@[c])"
    for raw in ("[default]", "([all ~x])", "(4@[a] [default])", "()"):
        with pytest.raises(LsfSyntaxError, match="is not made of value@"):
            parse_location(raw, 7)
