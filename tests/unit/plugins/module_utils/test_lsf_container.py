# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CONTAINER / EXEC_DRIVER value grammar: parse, render, refuse."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_container import (
    ContainerSpec,
    ExecDriverSpec,
    ValueSyntaxError,
    container_from_params,
    exec_driver_from_params,
    parse_container,
    parse_exec_driver,
    render_container,
    render_container_tokens,
    render_exec_driver,
    split_option_tokens,
)

# The joined logical values of the real samples (tests/fixtures/lsb_applications).
BOINC = ("docker[image($LSB_CONTAINER_IMAGE) options(--rm -P -v /gpfs/fpo/bwadata:/gpfs/fpo/bwadata)"
         " starter(lsfadmin)]")
OPENFOAM = ("docker[image(openfoam/openfoam6-paraview54)  "
            "                    options(--rm --net=host --ipc=host --entrypoint=  "
            "\t\t            --cap-add=SYS_PTRACE "
            "                            -v JOB_REPOSITORY_TOP:JOB_REPOSITORY_TOP "
            "\t                    @JOB_REPOSITORY_TOP/scripts/dockerPasswd.sh  "
            "\t\t     ) ]")
POWERAI = ("docker[image(registry:5000/powerai/base:4.0.0) --device=/dev/infiniband --device=/dev/nvidia0"
           " --ipc=host --ulimit memlock=819200000:819200000 --volume=nvidia_driver_375.:/usr/local/nvidia:ro)]")


def test_boinc_profile_parses_with_legacy_starter_clause():
    spec = parse_container(BOINC)
    assert spec.runtime == "docker"
    assert spec.image == "$LSB_CONTAINER_IMAGE"
    assert spec.options == ["--rm", "-P", "-v", "/gpfs/fpo/bwadata:/gpfs/fpo/bwadata"]
    assert spec.clauses == [("starter", "lsfadmin")]
    assert render_container(spec) == BOINC


def test_openfoam_profile_with_tabs_script_and_blank_before_bracket():
    spec = parse_container(OPENFOAM)
    assert spec.image == "openfoam/openfoam6-paraview54"
    assert spec.options == ["--rm", "--net=host", "--ipc=host", "--entrypoint=", "--cap-add=SYS_PTRACE",
                            "-v", "JOB_REPOSITORY_TOP:JOB_REPOSITORY_TOP"]
    assert spec.options_scripts == ["JOB_REPOSITORY_TOP/scripts/dockerPasswd.sh"]
    assert render_container(spec) == (
        "docker[image(openfoam/openfoam6-paraview54) options(--rm --net=host --ipc=host --entrypoint= "
        "--cap-add=SYS_PTRACE -v JOB_REPOSITORY_TOP:JOB_REPOSITORY_TOP "
        "@JOB_REPOSITORY_TOP/scripts/dockerPasswd.sh)]")


def test_powerai_profile_with_unbalanced_brackets_is_a_syntax_error():
    with pytest.raises(ValueSyntaxError, match="expected '\\('"):
        parse_container(POWERAI)


@pytest.mark.parametrize("text, fragment", [
    ("", "runtime"),
    ("docker", "expected '\\['"),
    ("docker[image(a)", "expected keyword"),
    ("docker[image(a) options(--rm]", "unexpected ']'"),
    ("docker[image(a b)]", "exactly one image"),
    ("docker[image(a) image(b)]", "twice"),
    ("docker[image(a)] extra", "after the closing"),
    ("docker[options(--rm \"x)]", "unterminated quote"),
    ("docker[options(--rm [x])]", "unexpected '\\['"),
    ("docker[image()]", "exactly one image"),
])
def test_malformed_container_values(text, fragment):
    with pytest.raises(ValueSyntaxError, match=fragment):
        parse_container(text)


def test_nested_parentheses_and_quotes_inside_options():
    spec = parse_container('nvidia-docker[image(x) options(--ulimit memlock=-1:-1 --env "A=(b c)" --x=(y z))]')
    assert spec.runtime == "nvidia-docker"
    assert spec.options == ["--ulimit", "memlock=-1:-1", "--env", '"A=(b c)"', "--x=(y z)"]
    assert parse_container(render_container(spec)) == spec


def test_reserved_options_are_warned_about():
    spec = parse_container("docker[image(x) options(--ulimit nofile=1:1 --name=foo --rm --ulimit memlock=-1:-1)]")
    warnings = spec.warnings()
    assert len(warnings) == 2  # memlock is not a limit LSF sets for the job
    assert "--ulimit nofile" in warnings[0] and "--name" in warnings[1]


def test_empty_options_clause_equals_absent_options():
    assert parse_container("docker[image(x) options()]") == parse_container("docker[image(x)]")
    assert render_container(ContainerSpec("shifter")) == "shifter[]"


def test_from_params_splits_multi_word_items_and_moves_scripts():
    spec = container_from_params({
        "runtime": "docker", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
        "options": ["--rm", "--volume /etc/group:/etc/group:ro", "@/shared/opt.sh"],
        "options_scripts": ["/shared/passwd.sh"], "clauses": {"starter": "root"},
    })
    assert spec.options == ["--rm", "--volume", "/etc/group:/etc/group:ro"]
    assert spec.options_scripts == ["/shared/opt.sh", "/shared/passwd.sh"]
    assert render_container(spec) == (
        "docker[image(nvcr.io/nvidia/pytorch:24.01-py3) options(--rm --volume /etc/group:/etc/group:ro "
        "@/shared/opt.sh @/shared/passwd.sh) starter(root)]")


@pytest.mark.parametrize("params, fragment", [
    ({"image": "img", "options": ["--label a#b"]}, "contains '#'"),
    ({"image": "img#1"}, "contains '#'"),
    ({"image": "img", "options": ["--x ]"]}, "']' inside options"),
    ({"image": "img", "options": ["--x (y"]}, "unbalanced"),
    ({"image": "img", "options": ["--x \\"]}, "continuation"),
    ({"image": "a b"}, "one name"),
    ({"image": "img", "options_scripts": ["/a b.sh"]}, "one path"),
    ({"runtime": "dock er", "image": "img"}, "plain name"),
    ({"image": "img", "options": ["--x\ny"]}, "line break"),
    ({"image": "img", "options": {"a": 1}}, "list of strings"),
    ({"image": "img", "clauses": ["starter"]}, "mapping"),
])
def test_from_params_refuses_unwritable_values(params, fragment):
    with pytest.raises(ValueError, match=fragment):
        container_from_params(params)


def test_exec_driver_roundtrip_and_canonical_order():
    text = ("monitor[/lsf/etc/docker-monitor.py]  context[user(lsfadmin)]\t"
            "starter[/lsf/etc/docker-starter.py] controller[/lsf/etc/docker-control.py]")
    spec = parse_exec_driver(text)
    assert spec == ExecDriverSpec("lsfadmin", "/lsf/etc/docker-starter.py", "/lsf/etc/docker-control.py",
                                  "/lsf/etc/docker-monitor.py")
    assert render_exec_driver(spec) == (
        "context[user(lsfadmin)] starter[/lsf/etc/docker-starter.py] controller[/lsf/etc/docker-control.py] "
        "monitor[/lsf/etc/docker-monitor.py]")


@pytest.mark.parametrize("text", [
    "", "context[user(a)] context[user(b)]", "context[group(a)]", "runner[/x]", "starter[/a /b]",
    "starter[/x", "context[user(a b)]",
])
def test_malformed_exec_driver_values(text):
    with pytest.raises(ValueSyntaxError):
        parse_exec_driver(text)


def test_exec_driver_from_params_refuses_hash_and_empty():
    with pytest.raises(ValueError, match="'#'"):
        exec_driver_from_params({"user": "lsf#admin"})
    with pytest.raises(ValueError, match="at least one"):
        exec_driver_from_params({})


# --- property tests -------------------------------------------------------

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_-./:=,$@", min_size=1, max_size=12)
_option = st.one_of(
    _word.filter(lambda w: not w.startswith("@")),
    st.builds(lambda a, b: '%s"%s %s"' % ("--env=", a, b), _word, _word),
    st.builds(lambda a, b: "--x=(%s %s)" % (a, b), _word, _word),
)
_path = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-./$", min_size=1, max_size=20)


@st.composite
def container_specs(draw):
    return ContainerSpec(
        draw(st.sampled_from(["docker", "nvidia-docker", "shifter", "singularity", "podman", "enroot"])),
        image=draw(st.one_of(st.none(), _path)),
        options=draw(st.lists(_option, max_size=6)),
        options_scripts=draw(st.lists(_path, max_size=3)),
        clauses=draw(st.lists(st.tuples(st.sampled_from(["starter", "container_io", "job_pre_post"]),
                                        st.one_of(st.just(""), _path)),
                              max_size=3, unique_by=lambda c: c[0])),
    )


@settings(max_examples=300)
@given(container_specs())
def test_container_structured_text_structured_is_identity(spec):
    assert parse_container(render_container(spec)) == spec


@settings(max_examples=200)
@given(container_specs(), st.lists(st.sampled_from([" ", "\t", "  "]), min_size=1, max_size=6))
def test_container_parse_ignores_blank_runs_between_tokens(spec, blanks):
    tokens = render_container_tokens(spec)
    spaced = "".join(tok + blanks[i % len(blanks)] for i, tok in enumerate(tokens))
    assert parse_container(spaced) == spec


@settings(max_examples=200)
@given(st.one_of(st.none(), _path), st.one_of(st.none(), _path), st.one_of(st.none(), _path),
       st.one_of(st.none(), _path))
def test_exec_driver_structured_text_structured_is_identity(user, starter, controller, monitor):
    if not any((user, starter, controller, monitor)):
        return
    spec = ExecDriverSpec(user, starter, controller, monitor)
    assert parse_exec_driver(render_exec_driver(spec)) == spec


@settings(max_examples=200)
@given(st.lists(_option, max_size=8))
def test_option_tokens_survive_join_and_split(options):
    assert split_option_tokens(" ".join(options)) == options


def test_from_params_takes_one_string_as_one_item():
    spec = container_from_params({"image": "img", "options": "--rm --ipc=host", "options_scripts": "/s.sh"})
    assert spec.options == ["--rm", "--ipc=host"] and spec.options_scripts == ["/s.sh"]


# --- blanks inside one docker argument -------------------------------------
# LSF splits options() at blanks and documents no quoting, so a value with a
# blank (a mount path with a space) would reach docker as several arguments.

@pytest.mark.parametrize("option", [
    "--volume=/my share:/my share",
    "-v /my share:/my share",
    "--volume /gpfs/my project:/gpfs/my project:ro",
    "--mount type=bind,source=/a b,target=/a b",
    '--env "A=b c"',
    "--volume='/x y:/x y'",
    "--label=(a b)",
])
def test_from_params_refuses_a_blank_inside_one_docker_argument(option):
    with pytest.raises(ValueError, match="blank") as err:
        container_from_params({"image": "img", "options": [option]})
    assert repr(option) in str(err.value)


@pytest.mark.parametrize("options", [
    ["--volume /etc/passwd:/etc/passwd:ro", "-v /a:/a", "--rm --ipc=host"],
    ["--volume=/gpfs/home:/gpfs/home", "--device=/dev/nvidia0", "--ulimit memlock=1:1"],
    ["--env", "A=b"],
    ["--ipc=host $OF_ENTRYPOINT --cap-add=SYS_PTRACE"],  # a variable may stand for options (IBM OpenFOAM sample)
])
def test_from_params_still_takes_flags_with_one_value_each(options):
    container_from_params({"image": "img", "options": options})


# --- the --ulimit warning: only for limits LSF sets from the job -----------

@pytest.mark.parametrize("options, warned", [
    (["--ulimit=memlock=819200000:819200000"], False),   # the lsf_docker role's default profiles
    (["--ulimit memlock=-1:-1"], False),
    (["--ulimit=nofile=1024:1024"], True),
    (["--ulimit", "stack=1:1"], True),
    (["--ulimit=core=0"], True),
    (["--ulimit"], True),
    (["--user=root"], True),
])
def test_ulimit_warning_only_for_what_overrides_lsf(options, warned):
    spec = container_from_params({"image": "img", "options": options})
    assert bool(spec.warnings()) is warned, spec.warnings()
