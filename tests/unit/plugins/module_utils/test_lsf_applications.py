# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsb.applications model: lossless reading, structural edits, file style."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_applications import (
    LINE_WIDTH,
    ApplicationsFile,
    LsfSyntaxError,
    apply_profiles,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_container import (
    ContainerSpec,
    parse_container,
    parse_exec_driver,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "lsb_applications"
SAMPLES = sorted(p for p in FIXTURES.iterdir() if p.name != "PROVENANCE.md")
MIXED = (FIXTURES / "constructed__mixed.lsb.applications").read_text()
POWERAI = (FIXTURES / "nicolas-tallet__OpenPOWER-HPC-System-Administration-Guide__"
           "lsb.applications.powerai-excerpt").read_text()

DOCKERAPP = {
    "name": "dockerapp",
    "description": "Docker job profile",
    "container": {"runtime": "docker", "image": "repo/img:tag",
                  "options": ["--rm", "--net=host", "--ipc=host", "-v /shared:/shared"],
                  "options_scripts": ["/shared/scripts/docker-options.sh"]},
    "exec_driver": {"user": "lsfadmin", "starter": "/opt/lsf/etc/docker-starter.py",
                    "controller": "/opt/lsf/etc/docker-control.py", "monitor": "/opt/lsf/etc/docker-monitor.py"},
    "parameters": {"res_req": "select[docker]"},
}


def lsb_read(text):
    """An independent reader that does what mbatchd's lsb reader does.

    Cut each line at '#', join a line ending in '\\' with the next one (the
    backslash dropped, nothing added), then collect KEY = value per profile.
    """
    profiles = []
    current = None
    pending = ""
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = pending + raw.split("#", 1)[0]
        if "#" not in raw and line.rstrip(" \t").endswith("\\"):
            pending = line.rstrip(" \t")[:-1]
            continue
        pending = ""
        words = line.split()
        if not words:
            continue
        if words[0].lower() == "begin":
            current = {}
        elif words[0].lower() == "end":
            profiles.append(current)
            current = None
        else:
            key, value = line.split("=", 1)
            current[key.strip().upper()] = value.strip()
    return {p["NAME"]: p for p in profiles}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_sample_round_trips_byte_identically(sample):
    text = sample.read_text()
    assert ApplicationsFile(text).render() == text
    names = ApplicationsFile(text).names()
    # a request that matches what is there changes nothing
    new, changed, dummy = apply_profiles(text, [{"name": names[0]}])
    assert (new, changed) == (text, [])


def test_matching_structured_request_is_not_rewritten_despite_other_line_breaks():
    new, changed, warnings = apply_profiles(MIXED, [DOCKERAPP])
    assert changed == []
    assert new == MIXED
    assert warnings == []


def test_changing_the_image_touches_only_the_container_lines():
    request = dict(DOCKERAPP, container=dict(DOCKERAPP["container"], image="repo/img:v2"))
    new, changed, dummy = apply_profiles(MIXED, [request])
    assert changed == ["dockerapp"]
    old_lines, new_lines = MIXED.splitlines(), new.splitlines()
    assert old_lines[:14] == new_lines[:14]
    assert old_lines[16:] == new_lines[16:]
    assert lsb_read(new)["dockerapp"]["CONTAINER"].startswith("docker[image(repo/img:v2) options(--rm")
    assert parse_container(lsb_read(new)["dockerapp"]["CONTAINER"]).image == "repo/img:v2"


def test_new_entry_follows_the_profile_style_and_comment_is_kept():
    new, changed, dummy = apply_profiles(MIXED, [{"name": "default", "description": "Changed",
                                                  "parameters": {"RUNLIMIT": 60}}])
    assert changed == ["default"]
    lines = new.splitlines()
    assert lines[7] == "DESCRIPTION  = Changed   # shown by bapp"
    assert lines[8] == "CPULIMIT=600"
    assert lines[9] == "RUNLIMIT     = 60"
    assert lines[10] == "End Application"


def test_new_profile_goes_after_the_last_profile_before_trailing_comments():
    new, changed, dummy = apply_profiles(MIXED, [{"name": "gpu", "description": "GPU jobs",
                                                  "parameters": {"GPU_REQ": "num=1:mode=exclusive_process"}}])
    assert changed == ["gpu"]
    assert new.startswith(MIXED.split("#Begin Application")[0])
    assert new.endswith("\n#Begin Application\n#NAME         = example\n#DESCRIPTION  = Example profile\n"
                        "#End Application\n")
    assert ("End Application\n\nBegin Application\nNAME         = gpu\nDESCRIPTION  = GPU jobs\n"
            "GPU_REQ      = num=1:mode=exclusive_process\nEnd Application\n\n#Begin") in new
    assert lsb_read(new)["gpu"]["GPU_REQ"] == "num=1:mode=exclusive_process"


def test_new_profile_in_an_indented_file_is_indented_like_it():
    text = (FIXTURES / "IBMSpectrumComputing__lsf-integrations__lsb.applications.openfoam-excerpt").read_text()
    new, dummy, dummy = apply_profiles(text, [{"name": "x", "description": "y"}])
    assert new.startswith(text)
    assert new[len(text):] == "\n        Begin Application\n        NAME         = x\n        DESCRIPTION  = y\n" \
                              "        End Application\n"


def test_removal_and_removal_of_the_missing():
    new, changed, dummy = apply_profiles(MIXED, [{"name": "default", "state": "absent"},
                                                 {"name": "nothere", "state": "absent"}])
    assert changed == ["default"]
    assert "NAME         = default" not in new
    assert new.startswith("#\n# lsb.applications: application profiles\n#\n#INCLUDE \"/shared/lsf/lsb.applications."
                          "site\"\n\nBegin Application\nNAME         = dockerapp\n")
    assert set(lsb_read(new)) == {"dockerapp"}


def test_remove_last_and_add_new_in_one_pass():
    new, changed, dummy = apply_profiles(MIXED, [{"name": "dockerapp", "state": "absent"},
                                                 {"name": "gpu", "description": "g"}])
    assert changed == ["dockerapp", "gpu"]
    assert set(lsb_read(new)) == {"default", "gpu"}
    assert new.endswith("End Application\n\n#Begin Application\n#NAME         = example\n"
                        "#DESCRIPTION  = Example profile\n#End Application\n")


def test_parameter_none_removes_and_bool_is_written_as_y():
    request = {"name": "default", "parameters": {"cpulimit": None, "DOCKER_IMAGE_AFFINITY": True}}
    new, changed, dummy = apply_profiles(MIXED, [request])
    assert changed == ["default"]
    prof = lsb_read(new)["default"]
    assert "CPULIMIT" not in prof and prof["DOCKER_IMAGE_AFFINITY"] == "Y"


def test_opaque_container_is_kept_warned_and_other_edits_still_happen():
    new, changed, warnings = apply_profiles(POWERAI, [{"name": "powerai", "parameters": {"RES_REQ": "select[docker]"}}])
    assert changed == ["powerai"]
    assert new.splitlines()[1] == POWERAI.splitlines()[1]
    assert any(w.startswith("line 2: CONTAINER of profile powerai does not follow") for w in warnings)


def test_seed_powerai_profile_from_structured_input_is_what_lsf_reads():
    options = ["--device=/dev/infiniband", "--device=/dev/nvidia0", "--device=/dev/nvidia1",
               "--device=/dev/nvidia2", "--device=/dev/nvidia3", "--device=/dev/nvidia-uvm",
               "--device=/dev/nvidia-uvm-tools", "--device=/dev/nvidiactl", "--ipc=host", "--network=host", "--rm",
               "--ulimit memlock=819200000:819200000", "--volume /etc/group:/etc/group:ro",
               "--volume /etc/passwd:/etc/passwd:ro", "--volume /gpfs/home:/gpfs/home",
               "--volume /gpfs/scratch:/gpfs/scratch", "--volume-driver=nvidia-docker",
               "--volume=nvidia_driver_375.:/usr/local/nvidia:ro"]
    request = {"name": "powerai", "description": "PowerAI",
               "container": {"image": "registry:5000/powerai/base:4.0.0", "options": options}}
    new, changed, warnings = apply_profiles(POWERAI, [request])
    assert changed == ["powerai"]
    assert not any("--ulimit" in w for w in warnings)  # memlock: no LSF job limit is overridden
    container_lines = [ln for ln in new.splitlines() if ln.startswith("CONTAINER") or ln.startswith("          ")]
    assert len(container_lines) > 1  # long value broken with continuations
    assert all(len(ln) <= LINE_WIDTH for ln in container_lines)
    assert all(ln.endswith(" \\") for ln in container_lines[:-1])
    read = lsb_read(new)["powerai"]
    spec = parse_container(read["CONTAINER"])
    assert spec.image == "registry:5000/powerai/base:4.0.0"
    assert " ".join(spec.options) == " ".join(options)
    assert read["CONTAINER"].count("(") == read["CONTAINER"].count(")")
    assert "#" not in read["CONTAINER"]
    assert read["NAME"] == "powerai" and read["DESCRIPTION"] == "PowerAI"
    assert apply_profiles(new, [request])[:2] == (new, [])
    assert not any("does not follow" in w for w in ApplicationsFile(new).warnings)


def test_exec_driver_written_one_clause_per_line_when_long_and_read_back():
    new, dummy, dummy = apply_profiles("", [dict(DOCKERAPP, exec_driver={
        "user": "lsfadmin", "starter": "/opt/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-starter.py",
        "controller": "/opt/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-control.py",
        "monitor": "/opt/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-monitor.py"})])
    read = lsb_read(new)["dockerapp"]
    assert parse_exec_driver(read["EXEC_DRIVER"]).user == "lsfadmin"
    assert new.startswith("Begin Application\nNAME        = dockerapp\n")
    assert "EXEC_DRIVER = context[user(lsfadmin)] \\\n              starter[" in new


def test_duplicate_key_last_wins_and_is_collapsed_on_change():
    text = (FIXTURES / "regiscely__LSF_Docker_boinc__lsb.applications").read_text()
    doc = ApplicationsFile(text)
    assert doc.profile("docker").value("DESCRIPTION") == "Docker User Service"
    assert any("DESCRIPTION is also set on line 3" in w for w in doc.warnings)
    new, changed, dummy = apply_profiles(text, [{"name": "docker", "description": "Docker User Service"}])
    assert (new, changed) == (text, [])
    new, changed, dummy = apply_profiles(text, [{"name": "docker", "description": "Boinc"}])
    assert new.count("DESCRIPTION") == 1 and lsb_read(new)["docker"]["DESCRIPTION"] == "Boinc"


@pytest.mark.parametrize("text, line, fragment", [
    ("Begin Application\nNAME = a\n", 1, "has no End"),
    ("NAME = a\n", 1, "outside any"),
    ("Begin Application\nNAME = a\nBegin Application\nEnd Application\n", 3, "inside section"),
    ("End Application\n", 1, "without a matching Begin"),
    ("Begin Application\nNAME a\nEnd Application\n", 2, "expected KEY = value"),
    ("Begin Queue\nQUEUE_NAME = a\nEnd Queue\n", 1, "does not belong"),
])
def test_malformed_files_raise_with_line(text, line, fragment):
    with pytest.raises(LsfSyntaxError, match=fragment) as err:
        apply_profiles(text, [{"name": "a", "description": "x"}])
    assert err.value.line == line


TIMED = ("Begin Application\nNAME = a\n#if time(8:00-18:00)\nRUNLIMIT = 5\n#else\nRUNLIMIT = 10\n#endif\n"
         "End Application\n")


def test_time_based_values_are_not_edited_but_other_keys_are():
    with pytest.raises(LsfSyntaxError, match="under #if") as err:
        apply_profiles(TIMED, [{"name": "a", "parameters": {"RUNLIMIT": 7}}])
    assert err.value.line == 4
    new, changed, dummy = apply_profiles(TIMED, [{"name": "a", "description": "d"}])
    assert changed == ["a"]
    assert new == TIMED.replace("#endif\n", "#endif\nDESCRIPTION = d\n")


EXTRA = ("Begin Application\nNAME        = a\nDESCRIPTION = d\nRUNLIMIT    = 10   # by hand\n"
         "RES_REQ     = select[docker]\nEnd Application\n\nBegin Application\nNAME = b\nRUNLIMIT = 5\n"
         "End Application\n")


def test_exclusive_removes_only_the_keys_the_request_does_not_name():
    request = {"name": "a", "description": "d", "parameters": {"RES_REQ": "select[docker]"}}
    # not exclusive: the extra key is no change
    assert apply_profiles(EXTRA, [request])[1] == []
    new, changed, dummy = apply_profiles(EXTRA, [dict(request, exclusive=True)])
    assert changed == ["a"]
    # only the RUNLIMIT line of profile a goes; profile b keeps its own RUNLIMIT
    assert new == EXTRA.replace("RUNLIMIT    = 10   # by hand\n", "")
    assert apply_profiles(new, [dict(request, exclusive=True)])[1] == []


def test_exclusive_keeps_time_based_keys_with_a_warning():
    new, changed, warnings = apply_profiles(TIMED, [{"name": "a", "exclusive": True}])
    assert changed == [] and new == TIMED
    assert any("line 4" in w and "RUNLIMIT" in w and "exclusive" in w for w in warnings)


def test_duplicate_profile_cannot_be_edited():
    text = "Begin Application\nNAME = a\nEnd Application\nBegin Application\nNAME = a\nEnd Application\n"
    assert "profile a is also defined on line 1" in ApplicationsFile(text).warnings[0]
    with pytest.raises(LsfSyntaxError, match="more than once") as err:
        apply_profiles(text, [{"name": "a", "description": "x"}])
    assert err.value.line == 4
    assert apply_profiles(text, [{"name": "b"}])[1] == ["b"]


@pytest.mark.parametrize("request_, fragment", [
    ({"name": "a", "description": "x # y"}, "'#'"),
    ({"name": "a b"}, "one word"),
    ({"name": "a", "parameters": {"RES REQ": "x"}}, "not a valid"),
    ({"name": "a", "parameters": {"NAME": "b"}}, "parameters.NAME"),
    ({"name": "a", "description": "x", "parameters": {"description": "y"}}, "both set"),
    ({"name": "a", "parameters": {"A": "x", "a": "y"}}, "given twice"),
    ({"name": "a", "parameters": {"A": "x \\"}}, "continuation"),
])
def test_unwritable_requests_are_refused(request_, fragment):
    with pytest.raises(ValueError, match=fragment):
        apply_profiles(MIXED, [request_])


def test_same_profile_twice_in_one_request_is_refused():
    with pytest.raises(ValueError, match="requested twice"):
        apply_profiles(MIXED, [{"name": "x"}, {"name": "x", "state": "absent"}])


def test_thousand_profiles_parse_edit_render():
    text = "".join("Begin Application\nNAME = app%d\nDESCRIPTION = d%d\nEnd Application\n\n" % (i, i)
                   for i in range(1000))
    requests = [{"name": "app%d" % i, "description": "d%d" % i if i % 10 else "new"} for i in range(1000)]
    new, changed, dummy = apply_profiles(text, requests)
    assert len(changed) == 100
    assert lsb_read(new)["app10"]["DESCRIPTION"] == "new" and lsb_read(new)["app11"]["DESCRIPTION"] == "d11"


# --- property tests -------------------------------------------------------

_blank = st.sampled_from(["", " ", "  ", "\t", " \t "])
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-./:[]()=", min_size=1, max_size=10)
_key = st.from_regex(r"[A-Z][A-Z_]{0,11}", fullmatch=True).filter(
    lambda k: k.lower() not in ("begin", "end", "name"))


@st.composite
def entry_lines(draw, key):
    indent, before, after = draw(_blank), draw(_blank), draw(_blank)
    words = draw(st.lists(_word, min_size=1, max_size=5))
    lines = [indent + key + before + "=" + after + words[0]]
    for word in words[1:]:
        if draw(st.booleans()):
            # IBM 10.1 also accepted blanks after the backslash
            lines[-1] += draw(st.sampled_from([" \\", " \\ ", "\t\\"]))
            lines.append(draw(_blank) + word)
        else:
            lines[-1] += " " + word
    if draw(st.booleans()):
        lines[-1] += draw(_blank) + "# note"
    return lines


@st.composite
def applications_texts(draw):
    lines = []
    names = []
    for index in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["# comment", "", "\t", "#INCLUDE \"x\""])))
        name = "app%d" % index
        names.append(name)
        lines.append(draw(_blank) + "Begin" + draw(st.sampled_from([" ", "\t", "   "])) + "Application")
        keys = draw(st.lists(_key.filter(lambda k: k != "NAME"), max_size=4, unique=True))
        groups = [[draw(_blank) + "NAME" + draw(_blank) + "=" + draw(_blank) + name]]
        for key in keys:
            groups.append(draw(entry_lines(key)))
        # comments and blank lines between entries (never inside a continued value)
        position = draw(st.integers(0, len(groups)))
        groups.insert(position, draw(st.lists(st.sampled_from(["# c", "", "  "]), max_size=2)))
        lines.extend(line for group in groups for line in group)
        lines.append(draw(_blank) + "End Application" + draw(st.sampled_from(["", " ", "\t"])))
    lines.extend(draw(st.lists(st.sampled_from(["#Begin Application", "# tail", ""]), max_size=3)))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(lines) + draw(st.sampled_from(["", eol])), names


@settings(max_examples=200, deadline=None)
@given(applications_texts())
def test_render_of_parse_is_identity(case):
    text, names = case
    doc = ApplicationsFile(text)
    assert doc.render() == text
    assert doc.names() == names


@settings(max_examples=200, deadline=None)
@given(applications_texts(), st.sampled_from(["app0", "app1", "app9"]),
       st.lists(_word.filter(lambda w: not w.endswith("\\")), min_size=1, max_size=25),
       _key)
def test_edit_then_reparse_finds_the_edit_and_keeps_other_profiles(case, name, words, key):
    text, names = case
    value = " ".join(words)
    new, changed, dummy = apply_profiles(text, [{"name": name, "parameters": {key: value}}])
    doc = ApplicationsFile(new)
    if "\r\n" in text:  # new lines use the file's own line ending
        assert new.count("\n") == new.count("\r\n")
    assert doc.profile(name).value(key).split() == words
    assert lsb_read(new)[name][key].split() == words
    before = ApplicationsFile(text)
    for other in names:
        if other != name:
            assert lsb_read(new)[other] == lsb_read(text)[other]
            assert before.profile(other).value(key) == doc.profile(other).value(key)
    again, changed_again, dummy = apply_profiles(new, [{"name": name, "parameters": {key: value}}])
    assert (again, changed_again) == (new, [])


_path = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-./:$", min_size=1, max_size=30)
container_specs = st.builds(
    ContainerSpec, st.sampled_from(["docker", "nvidia-docker", "singularity"]),
    image=st.one_of(st.none(), _path),
    options=st.lists(st.one_of(_path.map(lambda p: "--" + p), _path.map(lambda p: "-v " + p).map(str.split)
                               .map(" ".join)), max_size=12)
    .map(lambda items: " ".join(items).split()),
    options_scripts=st.lists(_path, max_size=2),
    clauses=st.lists(st.tuples(st.just("starter"), _path), max_size=1))


@settings(max_examples=150, deadline=None)
@given(applications_texts(), st.sampled_from(["app0", "app2", "new"]), container_specs)
def test_container_set_in_any_file_reads_back_as_the_same_structure(case, name, spec):
    text, dummy = case
    request = {"name": name, "container": spec.to_dict()}
    new, changed, dummy = apply_profiles(text, [request])
    assert parse_container(lsb_read(new)[name]["CONTAINER"]) == spec
    assert "#" not in lsb_read(new)[name]["CONTAINER"]
    assert apply_profiles(new, [request])[:2] == (new, [])


# --- values and keys that would break the file are refused up front, named ---

@pytest.mark.parametrize("request_, message", [
    ({"name": "powerai", "description": "x\ny"}, "application powerai: DESCRIPTION: value 'x\\ny' contains a line break"),
    ({"name": "powerai", "description": "x\n"}, "application powerai: DESCRIPTION: value 'x\\n' contains a line break"),
    ({"name": "powerai", "parameters": {"RES_REQ\n": "x"}}, "application powerai: parameter name 'RES_REQ\\n' is not"),
    ({"name": "powerai", "parameters": {"End": "x"}}, "application powerai: parameter name 'End' would be read as"),
    ({"name": "powerai", "parameters": {"begin": "x"}}, "application powerai: parameter name 'begin' would be read as"),
    ({"name": "powerai", "parameters": {"RES_REQ": "a\x00b"}}, "application powerai: RES_REQ: value 'a\\x00b' contains"),
    ({"name": "powerai", "parameters": {"RES_REQ": "a\x0bb"}}, "application powerai: RES_REQ: value 'a\\x0bb' contains"),
    ({"name": "powerai", "container": {"image": "img", "options": ["--volume=/a b:/a b"]}},
     "application powerai: CONTAINER: container option '--volume=/a b:/a b'"),
    ({"name": "powerai", "exec_driver": {"user": "lsf\nadmin"}}, "application powerai: EXEC_DRIVER: exec_driver user"),
])
def test_values_that_would_break_the_file_are_refused_naming_profile_and_key(request_, message):
    with pytest.raises(ValueError) as err:
        apply_profiles(POWERAI, [request_])
    assert str(err.value).startswith(message), str(err.value)


def test_replaced_opaque_container_is_not_reported_as_kept():
    request = {"name": "powerai", "container": {"image": "img", "options": ["--rm"]}}
    new, changed, warnings = apply_profiles(POWERAI, [request])
    assert changed == ["powerai"]
    assert not any("kept as it is" in w for w in warnings), warnings
    assert any(w.startswith("line 2: CONTAINER of profile powerai does not follow") and "; replaced by" in w
               for w in warnings), warnings
    # a removed profile's malformed value is neither kept nor replaced: no warning about it
    new, changed, warnings = apply_profiles(POWERAI, [{"name": "powerai", "state": "absent"}])
    assert changed == ["powerai"] and not any("CONTAINER" in w for w in warnings), warnings


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_adding_then_removing_a_profile_gives_back_the_exact_text(sample):
    text = sample.read_text()
    added, changed, dummy = apply_profiles(text, [{"name": "zzprobe", "description": "probe"}])
    assert changed == ["zzprobe"]
    assert apply_profiles(added, [{"name": "zzprobe", "state": "absent"}])[0] == text
