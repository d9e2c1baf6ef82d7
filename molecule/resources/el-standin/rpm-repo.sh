#!/usr/bin/env bash
# STAND-IN FOR TESTS. Runs inside a container of the EL node image (image.sh), which has rpmbuild,
# rpmsign, createrepo_c, gpg and dpkg-deb; build.sh starts it. Turns Debian packages into the
# RPM repositories an air-gapped EL site mirrors, with the package names and layout the roles use:
#
#   download.docker.com/linux/centos/gpg                 Docker's key (here: a throw-away test-bed key)
#   download.docker.com/linux/centos/9/x86_64/stable/    docker-ce, docker-ce-cli, containerd.io,
#                                                        docker-buildx-plugin, docker-compose-plugin;
#                                                        RPMs signed (gpgcheck), repomd.xml.asc too
#   nvidia.github.io/libnvidia-container/gpgkey          NVIDIA's key (throw-away)
#   nvidia.github.io/libnvidia-container/stable/rpm/x86_64/
#                                                        the toolkit's four packages at 1.17.9 and 1.18.0
#                                                        and the legacy nvidia-docker, nvidia-docker2;
#                                                        repomd.xml signed (repo_gpgcheck), RPMs not
#   el-base/9/x86_64/, el-base/RPM-GPG-KEY-el-standin    the site's mirror of BaseOS/AppStream/EPEL: the
#                                                        Python packages the roles install by name
#                                                        (python3-docker, -bcrypt, -cryptography,
#                                                        -requests) and what they need, and EPEL's
#                                                        busybox (/usr/sbin/busybox); RPMs signed
#   el-base/el-base.repo                                 its .repo file, as the site's base image has it
#   distribution/registry_<v>_linux_amd64.tar.gz(.sha256) a registry release as the upstream tarball
#
# Payloads are real: docker-ce is Debian 12's dockerd, docker-proxy and tini (docker-init), docker-ce-cli
# its docker CLI, containerd.io its containerd and runc; the NVIDIA packages carry the test bed's
# stand-in toolkit (molecule/resources/nvidia-standin); el-base carries Debian's Python packages; the
# registry is Debian's docker-registry. Every RPM has AutoReqProv: no and requires only packages of
# these repositories (the rest of the userland is Debian's, outside the rpm database).
#
# Usage: rpm-repo.sh WORK   (WORK/debs: the .debs; WORK/nvidia-debs: the stand-in toolkit .debs;
# writes WORK/out)
set -euo pipefail

work="${1:?usage: rpm-repo.sh WORK}"
debs="$work/debs"
out="$work/out"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}"
export GNUPGHOME="$work/gnupg"
rpmtop="$work/rpmbuild"
stage="$work/stage"
rm -rf "$out" "$rpmtop" "$stage" "$GNUPGHOME"
mkdir -p "$out" "$rpmtop" "$stage" "$GNUPGHOME"
chmod 0700 "$GNUPGHOME"
arch="$(uname -m)"
dist=el9

log() { printf 'rpm-repo: %s\n' "$*" >&2; }
deb() { ls "$debs"/"$1"_*.deb; }
# Debian's version without epoch and revision: 20.10.24+dfsg1-1+deb12u1+b6 -> 20.10.24
upstream() { dpkg-deb -f "$1" Version | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//' -e 's/[+~]\(dfsg\|ds\).*$//'; }

# ---- keys: one throw-away key per vendor, made at build time, never kept outside the cache ----
newkey() {  # newkey UID FILE: a signing key without passphrase, its public key armoured into FILE
    gpg --batch --quiet --passphrase '' --quick-gen-key "$1" rsa3072 sign 0
    mkdir -p "$(dirname "$2")"
    gpg --batch --armor --export "$1" > "$2"
}
docker_uid="hpc.gpu_containers test bed: stand-in Docker CE key (throw-away) <el-standin-docker@invalid>"
nvidia_uid="hpc.gpu_containers test bed: stand-in NVIDIA key (throw-away) <el-standin-nvidia@invalid>"
base_uid="hpc.gpu_containers test bed: stand-in EL base key (throw-away) <el-standin-base@invalid>"
docker_top="$out/download.docker.com/linux/centos"
nvidia_top="$out/nvidia.github.io/libnvidia-container"
base_top="$out/el-base"
newkey "$docker_uid" "$docker_top/gpg"
newkey "$nvidia_uid" "$nvidia_top/gpgkey"
newkey "$base_uid" "$base_top/RPM-GPG-KEY-el-standin"

# ---- one RPM from a staged tree ----
# RPM_EPOCH= RPM_REQUIRES="a, b >= 1" RPM_PROVIDES= RPM_OBSOLETES= RPM_PRE=file RPM_POST=file
# RPM_PREUN=file RPM_POSTUN=file mkrpm NAME VERSION ARCH SUMMARY ROOT DESTDIR
# Files under /etc are %config(noreplace); directories are not owned (the userland has them).
mkrpm() {
    local name="$1" version="$2" barch="$3" summary="$4" root="$5" dest="$6"
    local spec="$rpmtop/SPECS/$name-$version.spec" f
    mkdir -p "$rpmtop/SPECS" "$dest"
    {
        echo '%define debug_package %{nil}'
        echo '%define __os_install_post %{nil}'
        echo '%define _build_id_links none'
        echo '%define _binary_payload w6.gzdio'
        echo '%define use_source_date_epoch_as_buildtime 1'
        echo '%define clamp_mtime_to_source_date_epoch 1'
        echo '%define _buildhost el-standin.invalid'
        echo "Name: $name"
        [ -n "${RPM_EPOCH:-}" ] && echo "Epoch: $RPM_EPOCH"
        echo "Version: $version"
        echo "Release: 0standin1.$dist"
        echo "Summary: STAND-IN FOR TESTS: $summary"
        echo "License: see /usr/share/doc/$name"
        echo "Vendor: hpc.gpu_containers test bed"
        echo "BuildArch: $barch"
        echo "AutoReqProv: no"
        [ -n "${RPM_REQUIRES:-}" ] && echo "Requires: $RPM_REQUIRES"
        [ -n "${RPM_PROVIDES:-}" ] && echo "Provides: $RPM_PROVIDES"
        [ -n "${RPM_OBSOLETES:-}" ] && echo "Obsoletes: $RPM_OBSOLETES"
        echo
        echo '%description'
        echo "STAND-IN FOR TESTS: $summary"
        echo "Not the vendor's package: built by the hpc.gpu_containers test bed"
        echo "(molecule/resources/el-standin) to run the roles' EL package path on a"
        echo "stand-in userland (Debian 12 with an EL identity)."
        echo
        echo '%install'
        echo "cp -a '$root/.' %{buildroot}/"
        local s
        for s in pre post preun postun; do
            local var="RPM_${s^^}"
            if [ -n "${!var:-}" ]; then
                echo; echo "%$s"; cat "${!var}"
            fi
        done
        echo
        echo '%files'
        (cd "$root" && find . \( -type f -o -type l \) | LC_ALL=C sort) | while read -r f; do
            f="${f#.}"
            f="${f//%/%%}"
            case "$f" in
                /etc/*) echo "%config(noreplace) \"$f\"" ;;
                *) echo "\"$f\"" ;;
            esac
        done
    } > "$spec"
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    rpmbuild --quiet -bb --define "_topdir $rpmtop" --define "_rpmdir $dest" \
        --define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' "$spec" 2>&1 \
        | grep -v 'Could not canonicalize hostname' >&2 || true
    ls "$dest/$name-$version-0standin1.$dist.$barch.rpm" >/dev/null
}

# A staged tree from .debs, with Debian's /lib/systemd and /lib/udev moved to EL's /usr/lib.
extract() {  # extract DIR DEB...
    local dir="$1" d
    shift
    mkdir -p "$dir"
    for d in "$@"; do dpkg-deb -x "$d" "$dir"; done
    if [ -d "$dir/lib" ] && [ ! -L "$dir/lib" ]; then
        mkdir -p "$dir/usr/lib"
        cp -a "$dir/lib/." "$dir/usr/lib/"
        rm -rf "${dir:?}/lib"
    fi
}

scripts="$work/scripts"
mkdir -p "$scripts"
# What systemd's file triggers do on EL after a transaction that installs units (Debian's rpm has none).
cat > "$scripts/reload" <<'EOF'
systemctl daemon-reload >/dev/null 2>&1 || :
EOF

# ---- Docker CE, from Debian 12's docker.io, containerd, runc and tini ----
log "Docker CE repository"
dx="$stage/debian-docker"
extract "$dx" "$(deb docker.io)" "$(deb containerd)" "$(deb runc)" "$(deb tini)"
docker_v="$(upstream "$(deb docker.io)")"
containerd_v="$(upstream "$(deb containerd)")"
docker_repo="$docker_top/9/$arch/stable/Packages"

r="$stage/docker-ce"
install -D -m 0755 "$dx/usr/sbin/dockerd" "$r/usr/bin/dockerd"
install -D -m 0755 "$dx/usr/sbin/docker-proxy" "$r/usr/bin/docker-proxy"
install -D -m 0755 "$dx/usr/bin/tini-static" "$r/usr/bin/docker-init"
install -d "$r/usr/lib/systemd/system"
# Docker's own unit: no /etc/default file, dockerd in /usr/bin.
# shellcheck disable=SC2016  # $DOCKER_OPTS is the unit's text
sed -e '/^EnvironmentFile=/d' -e 's#^ExecStart=/usr/sbin/dockerd \(.*\) \$DOCKER_OPTS$#ExecStart=/usr/bin/dockerd \1#' \
    "$dx/usr/lib/systemd/system/docker.service" > "$r/usr/lib/systemd/system/docker.service"
grep -q '^ExecStart=/usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock$' \
    "$r/usr/lib/systemd/system/docker.service"
cp "$dx/usr/lib/systemd/system/docker.socket" "$r/usr/lib/systemd/system/"
install -D -m 0644 "$dx/usr/share/doc/docker.io/copyright" "$r/usr/share/doc/docker-ce/copyright"
# Docker's scriptlets: the group before the files; no preset (EL's presets leave docker disabled, Debian's
# would enable it); stopped and disabled on removal, restarted on upgrade.
cat > "$scripts/docker-ce.pre" <<'EOF'
getent group docker >/dev/null || groupadd --system docker
EOF
cat > "$scripts/docker-ce.preun" <<'EOF'
if [ "$1" -eq 0 ]; then
    systemctl --no-reload disable --now docker.service docker.socket >/dev/null 2>&1 || :
fi
EOF
cat > "$scripts/docker-ce.postun" <<'EOF'
systemctl daemon-reload >/dev/null 2>&1 || :
if [ "$1" -ge 1 ]; then systemctl try-restart docker.service >/dev/null 2>&1 || :; fi
EOF
RPM_EPOCH=3 RPM_REQUIRES="docker-ce-cli, containerd.io >= 1.6" RPM_PRE="$scripts/docker-ce.pre" \
RPM_POST="$scripts/reload" RPM_PREUN="$scripts/docker-ce.preun" RPM_POSTUN="$scripts/docker-ce.postun" \
    mkrpm docker-ce "$docker_v" "$arch" "the Docker engine (Debian 12's dockerd $docker_v)" "$r" "$docker_repo"

r="$stage/docker-ce-cli"
install -D -m 0755 "$dx/usr/bin/docker" "$r/usr/bin/docker"
install -D -m 0644 "$dx/usr/share/doc/docker.io/copyright" "$r/usr/share/doc/docker-ce-cli/copyright"
RPM_EPOCH=1 mkrpm docker-ce-cli "$docker_v" "$arch" "the Docker CLI (Debian 12's docker $docker_v)" "$r" "$docker_repo"

r="$stage/containerd.io"
for b in containerd containerd-shim containerd-shim-runc-v1 containerd-shim-runc-v2 ctr; do
    install -D -m 0755 "$dx/usr/bin/$b" "$r/usr/bin/$b"
done
install -D -m 0755 "$dx/usr/sbin/runc" "$r/usr/bin/runc"
install -D -m 0644 "$dx/usr/lib/systemd/system/containerd.service" "$r/usr/lib/systemd/system/containerd.service"
install -D -m 0644 "$dx/etc/containerd/config.toml" "$r/etc/containerd/config.toml"
install -D -m 0644 "$dx/usr/share/doc/containerd/copyright" "$r/usr/share/doc/containerd.io/copyright"
cat > "$scripts/containerd.postun" <<'EOF'
systemctl daemon-reload >/dev/null 2>&1 || :
if [ "$1" -ge 1 ]; then systemctl try-restart containerd.service >/dev/null 2>&1 || :; fi
EOF
RPM_PROVIDES="runc" RPM_POST="$scripts/reload" RPM_POSTUN="$scripts/containerd.postun" \
    mkrpm containerd.io "$containerd_v" "$arch" "containerd and runc (Debian 12's containerd $containerd_v, runc)" \
    "$r" "$docker_repo"

# Debian 12 has no buildx or compose v2: the two plugins are empty (the role installs them, nothing runs them).
for p in docker-buildx-plugin docker-compose-plugin; do
    r="$stage/$p"
    mkdir -p "$r/usr/share/doc/$p"
    echo "STAND-IN FOR TESTS: $p is empty (Debian 12 packages no Docker CLI plugin of that name)." \
        > "$r/usr/share/doc/$p/README.standin"
    mkrpm "$p" 0.0.1 "$arch" "$p (empty)" "$r" "$docker_repo"
done

# ---- NVIDIA container toolkit: the test bed's stand-in .debs, repackaged ----
log "NVIDIA container toolkit repository"
nvidia_repo="$nvidia_top/stable/rpm/$arch"
for d in "$work"/nvidia-debs/*.deb; do
    name="$(dpkg-deb -f "$d" Package)"
    full="$(dpkg-deb -f "$d" Version)"
    version="${full%-*}"
    r="$stage/nv-$name-$version"
    extract "$r" "$d"
    # Requires: the package's Depends on packages of this repository, "(= V-R)" as "= V-0standin1.el9".
    requires="$(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed -n \
        's/^ *\(libnvidia-container[a-z0-9-]*\|nvidia-container-toolkit[a-z-]*\) *(= *\([^-)]*\)-[^)]*).*$/\1 = \2-0standin1.'"$dist"'/p' \
        | paste -sd, - | sed 's/,/, /g')"
    post=""
    if dpkg-deb --ctrl-tarfile "$d" | tar -t 2>/dev/null | grep -qx './postinst'; then
        # The .deb's postinst as %post: called as dpkg calls it.
        { echo 'set -- configure'; dpkg-deb --ctrl-tarfile "$d" | tar -xO ./postinst | sed '1{/^#!/d}'; } \
            > "$scripts/$name-$version.post"
        post="$scripts/$name-$version.post"
    fi
    case "$name" in
        nvidia-container-toolkit*|libnvidia-container*) barch="$arch" ;;  # NVIDIA's are per-architecture
        *) barch=noarch ;;                                                # nvidia-docker2 is noarch
    esac
    RPM_REQUIRES="$requires" RPM_POST="$post" \
        mkrpm "$name" "$version" "$barch" "$(dpkg-deb -f "$d" Description | head -1 | sed 's/^STAND-IN FOR TESTS: //')" \
        "$r" "$nvidia_repo"
done

# ---- EL base (BaseOS/AppStream/EPEL mirror): the Python packages the roles install, from Debian ----
log "EL base repository"
base_repo="$base_top/9/$arch/Packages"
# Debian name -> EL name
declare -A el_name=(
    [python3-bcrypt]=python3-bcrypt [python3-certifi]=python3-certifi [python3-cffi-backend]=python3-cffi
    [python3-chardet]=python3-chardet [python3-charset-normalizer]=python3-charset-normalizer
    [python3-cryptography]=python3-cryptography [python3-docker]=python3-docker [python3-idna]=python3-idna
    [python3-pkg-resources]=python3-setuptools [python3-requests]=python3-requests [python3-six]=python3-six
    [python3-urllib3]=python3-urllib3 [python3-websocket]=python3-websocket-client
)
for dname in "${!el_name[@]}"; do
    d="$(deb "$dname")"
    name="${el_name[$dname]}"
    r="$stage/base-$name"
    extract "$r" "$d"
    requires="$(dpkg-deb -f "$d" Depends | tr '|' ',' | tr ',' '\n' | sed -e 's/^ *\([^ (]*\).*/\1/' -e 's/^python3-cffi-backend-api-.*/python3-cffi-backend/' | while read -r dep; do
        if [ -n "${el_name[$dep]:-}" ]; then echo "${el_name[$dep]}"; fi; done | sort -u | paste -sd, - | sed 's/,/, /g')"
    case "$(dpkg-deb -f "$d" Architecture)" in all) barch=noarch ;; *) barch="$arch" ;; esac
    RPM_REQUIRES="$requires" mkrpm "$name" "$(upstream "$d")" "$barch" \
        "$(dpkg-deb -f "$d" Description | head -1) (Debian's $dname)" "$r" "$base_repo"
done
# busybox as EPEL 9 packages it: one static binary, /usr/sbin/busybox (container_verify's build package on
# EL), here Debian's busybox-static.
bb="$stage/base-busybox"
extract "$stage/debian-busybox" "$(deb busybox-static)"
mkdir -p "$bb/usr/sbin"
install -m 0755 "$stage/debian-busybox/bin/busybox" "$bb/usr/sbin/busybox"
mkrpm busybox "$(upstream "$(deb busybox-static)")" "$arch" "Statically linked binary providing simplified versions of system commands (Debian's busybox-static)" \
    "$bb" "$base_repo"
cat > "$base_top/el-base.repo" <<'EOF'
# STAND-IN FOR TESTS: the site's mirror of the EL base repositories (BaseOS, AppStream, EPEL), as an
# air-gapped site's base image configures it. Put under /etc/yum.repos.d/ with the repository at
# /srv/el-standin (molecule/resources/el-standin).
[el-standin-base]
name=Stand-in EL 9 base (site mirror) - $basearch
baseurl=file:///srv/el-standin/el-base/$releasever/$basearch
gpgcheck=1
gpgkey=file:///srv/el-standin/el-base/RPM-GPG-KEY-el-standin
enabled=1
EOF

# ---- signatures and metadata ----
log "signing and indexing"
# (Debian's rpm calls /usr/bin/gpg2, which bookworm does not have.) Each signature is then checked
# against the exported public key in a scratch rpm database.
export GPG_TTY=/dev/null
sign_rpms() {  # sign_rpms UID KEYFILE DIR
    local f db="$work/rpmdb-$RANDOM"
    mkdir -p "$db"
    rpmdb --dbpath "$db" --initdb
    rpmkeys --dbpath "$db" --import "$2"
    for f in "$3"/*.rpm; do
        rpmsign --addsign --define "__gpg /usr/bin/gpg" --define "_gpg_name $1" --define "_gpg_path $GNUPGHOME" "$f" >/dev/null
        rpmkeys --dbpath "$db" --checksig "$f" | grep -q ': digests signatures OK$' \
            || { log "signature check failed: $f"; exit 1; }
    done
}
sign_rpms "$docker_uid" "$docker_top/gpg" "$docker_repo"
sign_rpms "$base_uid" "$base_top/RPM-GPG-KEY-el-standin" "$base_repo"
index() {  # index REPO_DIR UID: createrepo_c, repomd.xml signed
    createrepo_c --quiet --no-database --set-timestamp-to-revision --revision "$SOURCE_DATE_EPOCH" "$1"
    gpg --batch --yes --local-user "$2" --armor --detach-sign "$1/repodata/repomd.xml"
}
index "$docker_top/9/$arch/stable" "$docker_uid"
index "$nvidia_repo" "$nvidia_uid"
index "$base_top/9/$arch" "$base_uid"

# ---- the registry release, as upstream's registry_<v>_linux_amd64.tar.gz ----
log "registry release"
rx="$stage/debian-registry"
extract "$rx" "$(deb docker-registry)"
reg_v="$(upstream "$(deb docker-registry)")"
rt="$stage/registry-tar"
mkdir -p "$rt"
install -m 0755 "$rx/usr/bin/docker-registry" "$rt/registry"
install -m 0644 "$rx/usr/share/doc/docker-registry/copyright" "$rt/LICENSE"
printf 'STAND-IN FOR TESTS: Debian 12 docker-registry %s (/usr/bin/docker-registry) as registry.\n' \
    "$(dpkg-deb -f "$(deb docker-registry)" Version)" > "$rt/README.md"
mkdir -p "$out/distribution"
tarball="registry_${reg_v}_linux_amd64.tar.gz"
tar -C "$rt" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner -c LICENSE README.md registry \
    | gzip -9n > "$out/distribution/$tarball"
(cd "$out/distribution" && sha256sum "$tarball" > "$tarball.sha256")

# ---- what is where ----
{
    echo "# STAND-IN FOR TESTS: molecule/resources/el-standin/build.sh"
    for repo in "$docker_top/9/$arch/stable" "$nvidia_repo" "$base_top/9/$arch"; do
        echo "[${repo#"$out"/}]"
        for f in $(find "$repo" -name '*.rpm' | LC_ALL=C sort); do
            rpm -qp --nosignature --qf '%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}.%{ARCH}\n' "$f" 2>/dev/null \
                | sed 's/ (none):/ /'
        done
    done
    echo "[distribution]"
    cat "$out/distribution/$tarball.sha256"
} > "$out/MANIFEST"
log "done: $(grep -c '\.rpm$' <(find "$out" -name '*.rpm')) RPMs"
