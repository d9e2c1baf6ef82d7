# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Where an LSF cluster keeps its configuration: the layout the lsf_docker role edits.

From the places LSF_ENVDIR may be (an explicit one, the environment's, LSF_TOP/conf, the profile.lsf that
/etc/profile.d/lsf.sh sources, the usual install paths), lsf.conf's own directory settings (LSF_CONFDIR,
LSB_CONFDIR, LSF_SERVERDIR, LSF_BINDIR, LSF_LIVE_CONFDIR), the environment profile.lsf sets up, and the cluster
files next to lsf.shared (several: the one lsf.shared's Cluster section lists). Plain Python: the module
lsf_config_info reads the files and runs profile.lsf, and hands the texts here.
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import SHARED_SHAPES, parse_document

PROFILE_LSF_RE = re.compile(r"""([^\s'";]+)/profile\.lsf""")
# A login script that sets LSF_ENVDIR itself to a literal path (OpenLava and volclava's profile.d scripts do).
LSF_ENVDIR_RE = re.compile(r"""^\s*(?:export\s+)?LSF_ENVDIR=(["']?)(/[^\s'";$`]+)\1""", re.M)
CLUSTER_FILE_RE = re.compile(r"^lsf\.cluster\.([A-Za-z0-9_.-]*[A-Za-z0-9_])$")
LEFTOVER_RE = re.compile(r"(\.bak|\.orig|\.rpmsave|\.rpmnew|~)$")


class LayoutError(Exception):
    """The configuration cannot be found or is not one this role can edit; the message says what to set."""


def envdir_candidates(envdir, environment_envdir, top, profile_sh, extra):
    """The directories to look for lsf.conf in, first match wins: ``envdir`` alone when given; else the
    environment's LSF_ENVDIR, LSF_TOP/conf, the directory of each profile.lsf ``profile_sh`` (the text of the
    login scripts in /etc/profile.d) sources, each literal LSF_ENVDIR it sets, then ``extra``."""
    if envdir:
        return [envdir]
    out = []
    from_profile = PROFILE_LSF_RE.findall(profile_sh or "") + [m[1] for m in LSF_ENVDIR_RE.findall(profile_sh or "")]
    for candidate in ([environment_envdir, posixpath.join(top, "conf") if top else ""]
                      + from_profile + list(extra or [])):
        if candidate and candidate not in out:
            out.append(candidate)
    return out


def clusters_in_shared(text):
    """The cluster names of lsf.shared's Cluster section (its first column)."""
    doc = parse_document(text, shapes=SHARED_SHAPES, default_shape="auto")
    names = []
    for section in doc.find("cluster"):
        if section.header is None:
            continue
        for row in section.rows:
            if row.cells:
                names.append(row.cells[0])
    return names


def choose_cluster(explicit, file_names, shared_text, confdir):
    """The cluster to configure: ``explicit`` when given; else the one lsf.cluster.<name> file in ``confdir``
    (backups and package leftovers ignored); of several, the one lsf.shared's Cluster section lists."""
    if explicit:
        return explicit
    names = sorted(match.group(1) for match in (CLUSTER_FILE_RE.match(name) for name in file_names)
                   if match and not LEFTOVER_RE.search(match.group(0)))
    if len(names) > 1 and shared_text is not None:
        listed = set(clusters_in_shared(shared_text))
        names = [name for name in names if name in listed]
    if len(names) != 1:
        raise LayoutError("Cannot tell which LSF cluster to configure (found %s in %s). Set lsf_docker_cluster_name."
                          % (", ".join(names) or "none", confdir))
    return names[0]


def batch_configdir(lsb_confdir, cluster, cluster_configdir_exists, flat_files_exist):
    """Where the cluster's lsb.* files are: LSF's ``LSB_CONFDIR/<cluster>/configdir``; or LSB_CONFDIR itself, where
    the OpenLava lineage (OpenLava, volclava) keeps lsb.queues and lsb.params, when that holds them and there is no
    ``<cluster>/configdir``."""
    if flat_files_exist and not cluster_configdir_exists:
        return lsb_confdir
    return posixpath.join(lsb_confdir, cluster, "configdir")


def layout(envdir, conf, profile, cluster, serverdir="", lsb_configdir=""):
    """The paths the role edits and the directories it needs, from lsf.conf's values ``conf`` and the
    environment ``profile`` (LSF_SERVERDIR, LSF_BINDIR, PATH after profile.lsf); ``serverdir`` overrides;
    ``lsb_configdir`` is where the lsb.* files are (batch_configdir; default LSF's)."""
    confdir = conf.get("LSF_CONFDIR") or envdir
    lsb_confdir = lsb_confdir_of(conf, confdir)
    lsb_configdir = lsb_configdir or posixpath.join(lsb_confdir, cluster, "configdir")
    return {
        "envdir": envdir,
        "confdir": confdir,
        "lsb_confdir": lsb_confdir,
        "serverdir": serverdir or conf.get("LSF_SERVERDIR") or profile.get("LSF_SERVERDIR", ""),
        "bindir": conf.get("LSF_BINDIR") or profile.get("LSF_BINDIR", ""),
        "path": profile.get("PATH", ""),
        "live_confdir": conf.get("LSF_LIVE_CONFDIR", ""),
        "cluster": cluster,
        "lsf_conf": posixpath.join(envdir, "lsf.conf"),
        "lsf_shared": posixpath.join(confdir, "lsf.shared"),
        "lsf_cluster": posixpath.join(confdir, "lsf.cluster.%s" % cluster),
        "lsb_configdir": lsb_configdir,
        # The OpenLava lineage (OpenLava, volclava) keeps the lsb.* files in LSB_CONFDIR itself.
        "lineage": "openlava" if lsb_configdir.rstrip("/") == lsb_confdir.rstrip("/") else "lsf",
        "lsb_applications": posixpath.join(lsb_configdir, "lsb.applications"),
    }


def lsb_confdir_of(conf, confdir):
    """LSB_CONFDIR: lsf.conf's, else LSF_CONFDIR/lsbatch."""
    return conf.get("LSB_CONFDIR") or posixpath.join(confdir, "lsbatch")


def live_overrides(the_layout, live_files):
    """Refuse a cluster whose LSF_LIVE_CONFDIR holds bconf's live files: LSF reads them instead of LSF_CONFDIR."""
    live, confdir = the_layout["live_confdir"].rstrip("/"), the_layout["confdir"].rstrip("/")
    if live and live != confdir and live_files:
        raise LayoutError(
            "LSF_LIVE_CONFDIR (%s) holds live configuration written by bconf: %s. LSF reads those files instead of "
            "%s, so edits there would be ignored. Merge them into LSF_CONFDIR and remove them (IBM: \"Merge the "
            "configuration files that are generated by bconf into LSF_CONFDIR\"), then run this again."
            % (the_layout["live_confdir"], ", ".join(sorted(live_files)), the_layout["confdir"]))
