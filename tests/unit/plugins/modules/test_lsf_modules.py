# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_conf, lsf_resource and lsf_host through AnsibleModule: check mode predicts
exactly and writes nothing, --diff, idempotence, backup, return values."""

import shutil
from pathlib import Path

import pytest
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module, warning_texts

from ansible_collections.hpc.gpu_containers.plugins.modules import lsf_conf, lsf_host, lsf_resource

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "lsf_samples"


def sample(tmp_path, name, target):
    dest = tmp_path / target
    shutil.copyfile(SAMPLES / name, dest)
    dest.chmod(0o644)
    return dest


def check_then_run(module, capsys, path, **args):
    """Check mode first (nothing written, same prediction), then the real run,
    then a second real run that changes nothing."""
    before = path.read_bytes()
    predicted = run_module(module, capsys, check=True, diff=True, path=str(path), **args)
    assert path.read_bytes() == before
    done = run_module(module, capsys, diff=True, path=str(path), **args)
    assert predicted == done
    if done["changed"]:
        assert done["diff"]["before"] == before.decode()
        assert done["diff"]["after"] == path.read_text()
    again = run_module(module, capsys, path=str(path), **args)
    assert again["changed"] is False
    return done


def refused(module, capsys, path, **args):
    """A run the module must fail, leaving the file byte for byte as it was; its result."""
    before = path.read_bytes()
    res = run_module(module, capsys, path=str(path), **args)
    assert res["failed"] is True, res
    assert path.read_bytes() == before
    return res


def test_lsf_conf_seed_settings(tmp_path, capsys):
    path = sample(tmp_path, "bytedance__volclava__lsf.conf.in", "lsf.conf")
    original = path.read_text()
    res = check_then_run(lsf_conf, capsys, path, settings={
        "LSB_RESOURCE_ENFORCE": ["cpu", "memory"], "LSF_LINUX_CGROUP_ACCT": True, "LSF_PROCESS_TRACKING": "Y",
        "LSB_MAX_PACK_JOBS": 200, "LSF_AUTH": None})
    assert res["changed"] is True
    assert res["changed_keys"] == ["LSB_RESOURCE_ENFORCE", "LSF_LINUX_CGROUP_ACCT", "LSF_PROCESS_TRACKING",
                                   "LSB_MAX_PACK_JOBS", "LSF_AUTH"]
    assert res["settings"] == {"LSB_RESOURCE_ENFORCE": "cpu memory", "LSF_LINUX_CGROUP_ACCT": "Y",
                               "LSF_PROCESS_TRACKING": "Y", "LSB_MAX_PACK_JOBS": "200", "LSF_AUTH": None}
    text = path.read_text()
    assert "LSB_MAX_PACK_JOBS=200\n" in text and "LSF_AUTH=" not in text
    assert text.endswith('LSB_RESOURCE_ENFORCE="cpu memory"\nLSF_LINUX_CGROUP_ACCT=Y\nLSF_PROCESS_TRACKING=Y\n')
    assert text.replace("LSF_AUTH=eauth\n", "") != original


def test_lsf_conf_backup_and_duplicate_warning(tmp_path, capsys):
    path = tmp_path / "lsf.conf"
    path.write_text("LSF_LOG_MASK=LOG_ERR\nLSF_LOG_MASK=LOG_WARNING\n")
    res = run_module(lsf_conf, capsys, path=str(path), settings={"LSF_LOG_MASK": "LOG_DEBUG"}, backup=True)
    assert res["changed"] is True
    assert Path(res["backup_file"]).read_text() == "LSF_LOG_MASK=LOG_ERR\nLSF_LOG_MASK=LOG_WARNING\n"
    assert path.read_text() == "LSF_LOG_MASK=LOG_ERR\nLSF_LOG_MASK=LOG_DEBUG\n"
    assert warning_texts(res) == ["LSF_LOG_MASK is defined 2 times (lines 1, 2); the last one wins"]


def test_lsf_conf_rejects_unwritable_value(tmp_path, capsys):
    path = tmp_path / "lsf.conf"
    path.write_text("A=1\n")
    res = run_module(lsf_conf, capsys, path=str(path), settings={"A": 'say "hi"'})
    assert res["failed"] is True and "double quote" in res["msg"]
    res = run_module(lsf_conf, capsys, path=str(path), settings={"A": {"x": 1}})
    assert res["failed"] is True and "must be a string" in res["msg"]
    assert path.read_text() == "A=1\n"


def test_lsf_conf_missing_file_fails(tmp_path, capsys):
    res = run_module(lsf_conf, capsys, path=str(tmp_path / "nope"), settings={"A": "1"})
    assert res["failed"] is True and res["msg"] == "%s: file does not exist" % (tmp_path / "nope")


def test_lsf_resource_seed_on_default_shared(tmp_path, capsys):
    path = sample(tmp_path, "Azure__cyclecloud-lsf__lsf.shared.erb", "lsf.shared")
    res = check_then_run(lsf_resource, capsys, path, name="docker", type="Boolean", description="Docker container")
    assert res["changed"] is True
    assert res["resource"] == {"resourcename": "docker", "type": "Boolean", "interval": "", "increasing": "",
                               "consumable": None, "release": None, "description": "Docker container"}
    assert "   bluegene   Boolean ()       ()          (BLUEGENE)\n   docker     Boolean ()       ()          (Docker container)\nEnd Resource\n" \
        in path.read_text()
    res = check_then_run(lsf_resource, capsys, path, name="docker", description="Containers")
    assert res["resource"]["description"] == "Containers"
    res = check_then_run(lsf_resource, capsys, path, name="docker", state="absent")
    assert res["changed"] is True and res["resource"] is None
    assert path.read_bytes() == (SAMPLES / "Azure__cyclecloud-lsf__lsf.shared.erb").read_bytes()


def test_lsf_resource_bad_requests(tmp_path, capsys):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.shared", "lsf.shared")
    for args, msg in [
        (dict(name="mem", description="x"), "reserved"),
        (dict(name="1x", description="x"), "starts with a digit"),
        (dict(name="x", type="Boolean", increasing=True, description="x"), "only apply to Numeric"),
        (dict(name="x"), "description is required"),
        (dict(name="x", description="a (b)"), "parentheses"),
        (dict(name="x", interval=0, description="x"), "positive"),
    ]:
        res = refused(lsf_resource, capsys, path, **args)
        assert msg in res["msg"], res


def test_lsf_host_seed_on_openlava_cluster(tmp_path, capsys):
    path = sample(tmp_path, "tmetsch__docker_compose_openlava__lsf.cluster.openlava", "lsf.cluster.openlava")
    res = check_then_run(lsf_host, capsys, path, hosts=["node1", "node2", "gpu[01-02]"], resources=["docker"],
                         create_missing=True)
    assert res["changed_hosts"] == ["node1", "node2", "gpu[01-02]"]
    assert res["created_hosts"] == ["gpu[01-02]"]
    assert "node2               !              !     1       -       (docker)\n" \
           "node3               !              !     1       -       -\n" \
           "gpu[01-02]          !              !     1       -       (docker)\nEnd     Host\n" in path.read_text()
    res = check_then_run(lsf_host, capsys, path, hosts=["gpu02", "master"], resources=["docker", "!gpu"])
    assert res["changed_hosts"] == ["master", "gpu[01-02]"] and res["created_hosts"] == []
    res = check_then_run(lsf_host, capsys, path, hosts=["all"], resources=["docker", "gpu"], state="absent")
    assert res["changed_hosts"] == ["master", "node1", "node2", "gpu[01-02]"]
    assert "gpu[01-02]          !              !     1       -       ()\n" in path.read_text()


def test_lsf_host_warns_for_unknown_host(tmp_path, capsys):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster", "lsf.cluster.c1")
    res = run_module(lsf_host, capsys, path=str(path), hosts=["ghost"], resources=["docker"])
    assert res["changed"] is False and res["changed_hosts"] == []
    assert warning_texts(res) == ["host ghost has no row in the Host section; nothing done for it"]


@pytest.mark.parametrize("args,msg", [
    (dict(hosts=["a b"], resources=["docker"]), "not a valid host name"),
    (dict(hosts=["n1"], resources=["(docker)"]), "not a valid RESOURCES item"),
    (dict(hosts=["n1"], resources=["docker"], model="a b"), "model must be one word"),
])
def test_lsf_host_bad_requests(tmp_path, capsys, args, msg):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster", "lsf.cluster.c1")
    res = run_module(lsf_host, capsys, path=str(path), **args)
    assert res["failed"] is True and msg in res["msg"]


def test_lsf_host_refuses_a_model_that_would_break_the_row(tmp_path, capsys):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster", "lsf.cluster.c1")
    res = refused(lsf_host, capsys, path, hosts=["newhost"], resources=["docker"], create_missing=True, model="(POWER9")
    assert res["msg"] == "%s: refusing to write '(POWER9' into the Host section: it does not read back as one value" % path


def test_lsf_conf_keeps_site_words_of_set_valued_keys(tmp_path, capsys):
    path = tmp_path / "lsf.conf"
    path.write_text('# site\nLSB_RESOURCE_ENFORCE="memory cpu gpu"\n')
    before = path.read_bytes()
    res = check_then_run(lsf_conf, capsys, path, settings={"LSB_RESOURCE_ENFORCE": ["cpu", "memory"]})
    assert res["changed"] is False and res["changed_keys"] == []
    assert res["settings"] == {"LSB_RESOURCE_ENFORCE": "memory cpu gpu"}
    assert path.read_bytes() == before
    path.write_text('LSB_RESOURCE_ENFORCE="memory"\n')
    res = check_then_run(lsf_conf, capsys, path, settings={"LSB_RESOURCE_ENFORCE": "cpu memory"})
    assert res["changed_keys"] == ["LSB_RESOURCE_ENFORCE"] and path.read_text() == 'LSB_RESOURCE_ENFORCE="memory cpu"\n'
    # merge_lists=false: exactly the words given (order still free)
    path.write_text('LSB_RESOURCE_ENFORCE="memory cpu gpu"\n')
    res = check_then_run(lsf_conf, capsys, path, settings={"LSB_RESOURCE_ENFORCE": "cpu memory"}, merge_lists=False)
    assert res["settings"] == {"LSB_RESOURCE_ENFORCE": "cpu memory"} and path.read_text() == 'LSB_RESOURCE_ENFORCE="cpu memory"\n'
    res = run_module(lsf_conf, capsys, path=str(path), settings={"LSB_RESOURCE_ENFORCE": "memory cpu"}, merge_lists=False)
    assert res["changed"] is False
    # list_keys names the set-valued keys
    path.write_text('LSF_X="b a"\n')
    res = run_module(lsf_conf, capsys, path=str(path), settings={"LSF_X": "a"}, list_keys=["LSF_X"])
    assert res["changed"] is False and res["settings"] == {"LSF_X": "b a"}


@pytest.mark.parametrize("value", ["$(touch canary)", "`touch canary`", "$HOME", "x\\", "a\nb", "x\x00"])
def test_lsf_conf_refuses_shell_active_values_naming_the_key(tmp_path, capsys, value):
    path = tmp_path / "lsf.conf"
    path.write_text("A=1\n")
    res = run_module(lsf_conf, capsys, path=str(path), settings={"LSF_SITE": value})
    assert res["failed"] is True and res["msg"].startswith("%s: LSF_SITE: value " % path)
    assert path.read_text() == "A=1\n" and not (tmp_path / "canary").exists()


@pytest.mark.parametrize("module_args, fragment", [
    (dict(hosts=["newhost"], resources=["docker"], create_missing=True, model="POWER9\n"), "model must be one word"),
    (dict(hosts=["n1"], resources=["docker"], type="LINUX\n"), "type must be one word"),
    (dict(hosts=["End"], resources=["docker"], create_missing=True), "would be read as an End line"),
    (dict(hosts=["n1"], resources=["docker\n"]), "not a valid RESOURCES item"),
])
def test_lsf_host_refuses_line_breaking_input_up_front(tmp_path, capsys, module_args, fragment):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster", "lsf.cluster.c1")
    res = refused(lsf_host, capsys, path, **module_args)
    assert fragment in res["msg"], res["msg"]


@pytest.mark.parametrize("name, fragment", [("End", "would be read as an End line"),
                                            ("begin", "would be read as a Begin line"),
                                            ("docker\n", "contains a character LSF forbids")])
def test_lsf_resource_refuses_names_that_break_the_section(tmp_path, capsys, name, fragment):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.shared", "lsf.shared")
    res = refused(lsf_resource, capsys, path, name=name, description="x")
    assert fragment in res["msg"], res["msg"]


def test_lsf_host_per_host_resources_in_one_edit(tmp_path, capsys):
    """Each node's own static values (its platform): set, changed, removed, Boolean; other items kept."""
    path = sample(tmp_path, "tmetsch__docker_compose_openlava__lsf.cluster.openlava", "lsf.cluster.openlava")
    check_then_run(lsf_host, capsys, path, hosts=["node1"], resources=["docker"])
    res = check_then_run(lsf_host, capsys, path, host_resources={
        "node1": {"cuda_version": 12020, "compute_cap_min": 70, "x86_64_level": 3, "gpu": True},
        "node2": {"cuda_version": 12020, "compute_cap_min": 80, "x86_64_level": None},
        "node3": {"cuda_version": 12020, "compute_cap_min": 80, "x86_64_level": None},
    })
    assert sorted(res["changed_hosts"]) == ["node1", "node2", "node3"] and res["created_hosts"] == []
    text = path.read_text()
    assert "(docker compute_cap_min=70 cuda_version=12020 gpu x86_64_level=3)\n" in text
    assert text.count("(compute_cap_min=80 cuda_version=12020)\n") == 2
    # a driver update on node1 and a node that lost its level: values replaced and removed in place
    res = check_then_run(lsf_host, capsys, path, host_resources={
        "node1": {"cuda_version": 12040, "x86_64_level": None, "gpu": False}})
    assert res["changed_hosts"] == ["node1"]
    assert "(docker compute_cap_min=70 cuda_version=12040)\n" in path.read_text()


@pytest.mark.parametrize("args,msg", [
    (dict(host_resources={"node1": {"cuda version": 1}}), "node1: "),
    (dict(host_resources={"node1": {"cuda_version": "12.2 x"}}), "node1: "),
    (dict(host_resources={"node1": {"cuda_version": [1]}}), "must be a number, a word, true, false or null"),
    (dict(host_resources={"node1": ["docker"]}), "node1 must map resource names to values"),
    (dict(host_resources={"node1": {"docker": True}}, state="absent"), "state=present only"),
    (dict(host_resources={"node1": {"docker": True}}, hosts=["node1"], resources=["x"]), "mutually exclusive"),
    (dict(hosts=["node1"]), "parameters are required together"),
    (dict(static_values="resource_map", hosts=["node1"], resources=["docker"]), "works with host_resources only"),
    (dict(static_values="resource_map", host_resources={"node1": {"level": "a b"}}), "is not a static value"),
    (dict(static_values="resource_map", host_resources={"node1": {"End": 1}}), "End"),
])
def test_lsf_host_per_host_resources_bad_requests(tmp_path, capsys, args, msg):
    path = sample(tmp_path, "tmetsch__docker_compose_openlava__lsf.cluster.openlava", "lsf.cluster.openlava")
    res = refused(lsf_host, capsys, path, **args)
    assert msg in res["msg"], res["msg"]


def test_lsf_resource_several_in_one_edit(tmp_path, capsys):
    path = sample(tmp_path, "Azure__cyclecloud-lsf__lsf.shared.erb", "lsf.shared")
    wanted = [{"name": "cuda_version", "type": "Numeric", "increasing": False, "description": "newest CUDA"},
              {"name": "compute_cap_min", "type": "Numeric", "increasing": False, "description": "lowest GPU cc"},
              {"name": "docker", "type": "Boolean", "description": "Docker container"}]
    res = check_then_run(lsf_resource, capsys, path, resources=wanted)
    assert list(res["resources"]) == ["cuda_version", "compute_cap_min", "docker"] and "resource" not in res
    assert res["resources"]["cuda_version"]["type"] == "Numeric" and res["resources"]["cuda_version"]["increasing"] == "N"
    text = path.read_text()
    assert text.index("cuda_version") < text.index("compute_cap_min") < text.index("(Docker container)")
    res = check_then_run(lsf_resource, capsys, path, resources=[{"name": "cuda_version", "state": "absent"},
                                                                {"name": "compute_cap_min", "state": "absent"},
                                                                {"name": "docker", "state": "absent"}])
    assert res["resources"] == {"cuda_version": None, "compute_cap_min": None, "docker": None}
    assert path.read_bytes() == (SAMPLES / "Azure__cyclecloud-lsf__lsf.shared.erb").read_bytes()


@pytest.mark.parametrize("args, msg", [
    (dict(resources=[{"name": "x", "description": "x"}, {"name": "mem", "description": "m"}]), "resources[1] (mem): "),
    (dict(resources=[{"name": "x", "description": "x", "colour": "red"}]), "resources[0]: unknown key(s) colour"),
    (dict(resources=[{"description": "x"}]), "resources[0]: name is required"),
    (dict(resources=[{"name": "x", "description": "x"}, {"name": "x", "state": "absent"}]), "x is given twice"),
    (dict(resources=[{"name": "x", "state": "gone"}]), "state must be present or absent"),
    (dict(resources=[{"name": "x", "description": "x"}], type="Numeric"), "mutually exclusive"),
    (dict(), "one of the following is required"),
])
def test_lsf_resource_several_bad_requests_change_nothing(tmp_path, capsys, args, msg):
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.shared", "lsf.shared")
    res = refused(lsf_resource, capsys, path, **args)
    assert msg in res["msg"], res["msg"]


def test_lsf_conf_defaults_fill_only_what_the_site_left_undefined(tmp_path, capsys):
    path = tmp_path / "lsf.conf"
    path.write_text("# site\nLSB_GPU_NEW_SYNTAX=N   # we submit with -R\nLSF_LOG_MASK=LOG_WARNING\n")
    res = check_then_run(lsf_conf, capsys, path, settings={"LSF_PROCESS_TRACKING": True},
                         defaults={"LSB_GPU_NEW_SYNTAX": "extend", "LSF_GPU_AUTOCONFIG": True,
                                   "LSF_PROCESS_TRACKING": "N"})
    # The site's N stays, a key settings names is set from settings, the missing default is appended.
    assert res["changed_keys"] == ["LSF_PROCESS_TRACKING", "LSF_GPU_AUTOCONFIG"]
    assert res["settings"] == {"LSF_PROCESS_TRACKING": "Y", "LSB_GPU_NEW_SYNTAX": "N", "LSF_GPU_AUTOCONFIG": "Y"}
    assert path.read_text() == ("# site\nLSB_GPU_NEW_SYNTAX=N   # we submit with -R\nLSF_LOG_MASK=LOG_WARNING\n"
                                "LSF_PROCESS_TRACKING=Y\nLSF_GPU_AUTOCONFIG=Y\n")


def test_lsf_conf_defaults_are_checked_like_settings(tmp_path, capsys):
    path = tmp_path / "lsf.conf"
    path.write_text("LSF_LOG_MASK=LOG_WARNING\n")
    res = run_module(lsf_conf, capsys, path=str(path), settings={}, defaults={"LSB_GPU_NEW_SYNTAX": "$(reboot)"})
    assert res["failed"] is True and "LSB_GPU_NEW_SYNTAX" in res["msg"]
    assert path.read_text() == "LSF_LOG_MASK=LOG_WARNING\n"


@pytest.mark.parametrize("name", ["Nero09__LSF-on-aws-cloud__lsf.conf", "bytedance__volclava__lsf.conf.in"])
def test_lsf_conf_defaults_on_published_files_append_and_keep_every_line(tmp_path, capsys, name):
    path = sample(tmp_path, name, "lsf.conf")
    original = path.read_text()
    res = check_then_run(lsf_conf, capsys, path, settings={},
                         defaults={"LSB_GPU_NEW_SYNTAX": "extend", "LSF_GPU_AUTOCONFIG": True})
    assert res["changed_keys"] == ["LSB_GPU_NEW_SYNTAX", "LSF_GPU_AUTOCONFIG"]
    text = path.read_text()
    assert text.startswith(original.rstrip("\n"))
    assert text.endswith("LSB_GPU_NEW_SYNTAX=extend\nLSF_GPU_AUTOCONFIG=Y\n")
    # The published file with a value of its own keeps it, and only the other key is added.
    path.write_text(original + "LSB_GPU_NEW_SYNTAX=Y\n")
    res = check_then_run(lsf_conf, capsys, path, settings={},
                         defaults={"LSB_GPU_NEW_SYNTAX": "extend", "LSF_GPU_AUTOCONFIG": True})
    assert res["settings"]["LSB_GPU_NEW_SYNTAX"] == "Y"
    assert path.read_text() == original + "LSB_GPU_NEW_SYNTAX=Y\nLSF_GPU_AUTOCONFIG=Y\n"


def test_lsf_host_static_values_in_the_resource_map(tmp_path, capsys):
    """The OpenLava lineage's form: values as value@[hosts] instances, Booleans on the rows, name=value moved off."""
    path = sample(tmp_path, "tmetsch__docker_compose_openlava__lsf.cluster.openlava", "lsf.cluster.openlava")
    check_then_run(lsf_host, capsys, path, host_resources={"node1": {"x86_64_level": 2}})
    assert "x86_64_level=2" in path.read_text()
    res = check_then_run(lsf_host, capsys, path, static_values="resource_map", host_resources={
        "node1": {"docker": True, "x86_64_level": 3, "cuda_version": 12020},
        "node2": {"docker": True, "x86_64_level": 4, "cuda_version": 12020},
        "node3": {"docker": True, "x86_64_level": 3},
    })
    assert res["changed_resources"] == ["x86_64_level", "cuda_version"]
    text = path.read_text()
    assert "x86_64_level=" not in text and text.count("(docker)\n") == 3
    assert "\nx86_64_level  (3@[node1 node3] 4@[node2])\ncuda_version  (12020@[node1 node2])\nEnd ResourceMap\n" in text
    # node2 loses its level, node3 gets node2's old one; an instance a site wrote for another host stays.
    path.write_text(text.replace("4@[node2])", "4@[node2] 1@[login01])"))
    res = check_then_run(lsf_host, capsys, path, static_values="resource_map", host_resources={
        "node2": {"x86_64_level": None}, "node3": {"x86_64_level": 4}})
    assert res["changed_resources"] == ["x86_64_level"] and res["changed_hosts"] == []
    assert "\nx86_64_level  (3@[node1] 4@[node3] 1@[login01])\n" in path.read_text()


def test_lsf_host_static_values_next_to_a_sites_own_resource_map_row(tmp_path, capsys):
    path = sample(tmp_path, "tmetsch__docker_compose_openlava__lsf.cluster.openlava", "lsf.cluster.openlava")
    path.write_text(path.read_text().replace("End ResourceMap", "scratch  ([default])\nEnd ResourceMap"))
    res = refused(lsf_host, capsys, path, static_values="resource_map", host_resources={"node1": {"scratch": 100}})
    assert res["msg"].startswith("%s:15: ResourceMap LOCATION ([default]) is not made of" % path)
    res = check_then_run(lsf_host, capsys, path, static_values="resource_map", host_resources={"node1": {"gpus": 2}})
    assert "scratch  ([default])\ngpus" in path.read_text()


def test_lsf_host_static_values_where_no_resource_map_is(tmp_path, capsys):
    """Nero09's file has its ResourceMap commented out: a new section goes after the Host section."""
    path = sample(tmp_path, "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster", "lsf.cluster.LSFCluster")
    before = path.read_text()
    check_then_run(lsf_host, capsys, path, static_values="resource_map",
                   host_resources={"ip-172-30-25-222": {"cuda_version": 12020}})
    after = path.read_text()
    assert after.replace("\nBegin ResourceMap\nRESOURCENAME  LOCATION\ncuda_version  (12020@[ip-172-30-25-222])\n"
                         "End ResourceMap\n", "", 1) == before
    assert after.index("End     Host") < after.index("Begin ResourceMap") < after.index("Begin Parameters")
