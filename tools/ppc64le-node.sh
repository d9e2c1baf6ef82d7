#!/usr/bin/env bash
# A real ppc64le (POWER9) node for the test bed: a Debian 12 ppc64el disk
# image built from Debian packages, booted under full-system emulation
# (qemu-system-ppc64, pseries machine, POWER9 CPU, TCG) and reached over SSH
# like any other node.
#
#   tools/ppc64le-node.sh build            build (or find) the cached disk image; install the
#                                          cross compiler the scenario builds the NVML stand-in with
#   tools/ppc64le-node.sh start [NAME]     build if needed, boot NAME, wait for sshd
#   tools/ppc64le-node.sh status [NAME]    connection facts of a running node
#   tools/ppc64le-node.sh stop [NAME]      power it off and drop its writable layer
#   tools/ppc64le-node.sh ssh [NAME] [CMD...]
#
# start/status print the connection facts as KEY=VALUE lines on stdout
# (PPC64LE_NAME, PPC64LE_SSH_HOST, PPC64LE_SSH_PORT, PPC64LE_SSH_USER,
# PPC64LE_SSH_KEY, PPC64LE_PID, PPC64LE_CONSOLE); everything else goes to
# stderr.
#
# Cache: ${PPC64LE_CACHE:-~/.cache/hpc.gpu_containers/ppc64le}/<recipe-hash>/
#   disk.img (raw ext4, the root filesystem), vmlinux, initrd.img, and
#   id_ed25519(.pub), the test bed's SSH key, authorized for root.
# The recipe hash is the first 12 hex digits of the sha256 of the recipe
# section of this script (between the "recipe" markers below): editing the
# boot or stop code does not rebuild the image, editing the package list does.
#
# Every start boots a fresh node: writes go to a qcow2 overlay on top of the
# cached image, in <cache>/run/<NAME>/, which `stop` removes.
#
# What is emulated and what it costs: molecule/README.md, section "ppc64le".
#
# Environment:
#   PPC64LE_CACHE     cache root (see above)
#   PPC64LE_REBUILD   1: rebuild the image even when it is cached
#   PPC64LE_MIRROR    Debian mirror (default http://deb.debian.org/debian)
#   PPC64LE_SSH_PORT  host port forwarded to the guest's sshd (default: a free one)
#   PPC64LE_MEMORY    guest memory in MiB (default 1024)
#   PPC64LE_SMP       guest CPUs (default 2; more than the host's cores only adds contention)
#   PPC64LE_GUESTFWD  extra slirp guestfwd rules, space-separated, each
#                     "GUEST_IP:PORT=HOST_IP:PORT": a TCP connection from the guest
#                     to GUEST_IP:PORT reaches HOST_IP:PORT on this machine
#                     (e.g. a registry in a container next to the node)
#   PPC64LE_VIRTFS    host directories shared with the guest over virtio-9p,
#                     space-separated "TAG=HOST_DIR"; in the guest:
#                     mount -t 9p -o trans=virtio,version=9p2000.L TAG MOUNTPOINT
#   PPC64LE_BOOT_TIMEOUT  seconds to wait for sshd (default 900: 20-40 s on an
#                         idle core, minutes beside other busy work)
# The image build (mmdebstrap, mkfs) and qemu run at the caller's priority: the
# build is the first step of CI's longest path (make ppc64le), and a niced
# emulated CPU beside busy cores starves (sshd does not answer for minutes) and
# its scenario ends last, not first.
set -euo pipefail

self="${BASH_SOURCE[0]}"
cache_root="${PPC64LE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hpc.gpu_containers/ppc64le}"
mirror="${PPC64LE_MIRROR:-http://deb.debian.org/debian}"

log() { printf 'ppc64le-node: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The recipe hash covers only the lines between the two markers.
# The test bed's one Debian root filesystem recipe (tools/debian-rootfs.sh) is part of this one's.
lib="$(dirname "$self")/debian-rootfs.sh"
# shellcheck source=tools/debian-rootfs.sh
. "$lib"
recipe_hash="$( { sed -n '/^# >>> recipe$/,/^# <<< recipe$/p' "$self"; cat "$lib"; } | sha256sum | cut -c1-12)"
image_dir="$cache_root/$recipe_hash"

need_root() { [ "$(id -u)" -eq 0 ] || die "$1 needs root (mmdebstrap --mode=root, binfmt_misc)"; }

# Running ppc64el maintainer scripts on this x86_64 host: qemu-user through
# binfmt_misc. binfmt_misc may not even be mounted (containers, CI runners).
ensure_binfmt() {
    local missing=()
    command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
    command -v arch-test >/dev/null || missing+=(arch-test)
    [ -e /usr/bin/qemu-ppc64le-static ] || missing+=(qemu-user-static)
    command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
    command -v ssh-keygen >/dev/null || missing+=(openssh-client)
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing from Debian: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
    fi
    if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    fi
    if [ ! -e /proc/sys/fs/binfmt_misc/qemu-ppc64le ]; then
        local conf
        conf=$(cat /usr/lib/binfmt.d/qemu-ppc64le.conf 2>/dev/null) || die "no /usr/lib/binfmt.d/qemu-ppc64le.conf (qemu-user-static)"
        # The F flag opens the (static) interpreter now, so it works inside the chroot.
        printf '%s' "$conf" >/proc/sys/fs/binfmt_misc/register
        log "registered binfmt qemu-ppc64le"
    fi
    arch-test ppc64el >/dev/null || die "arch-test ppc64el fails: this host cannot run ppc64el binaries"
}

# mmdebstrap --mode=root mounts /proc, /sys and /dev/pts in the chroot; never
# delete a build directory something is still mounted under.
cleanup_build() {
    if findmnt -rn -o TARGET | grep -q -F "$1/"; then
        log "not removing $1: something is still mounted under it"
        return 0
    fi
    rm -rf --one-file-system "$1"
}

# >>> recipe
disk_size=6G
# A node of the cluster, and nothing the collection installs under test
# except docker.io (an engine install under TCG takes minutes; the
# docker_engine role finds it installed and configures it):
#   kernel + initramfs-tools + udev + kmod   boot on the pseries machine
#   systemd systemd-sysv dbus                PID 1, services, handlers
#   openssh-server                           how Ansible reaches it
#   python3 python3-apt                      Ansible modules, apt
#   sudo                                     become to other users (lsfadmin)
#   iproute2 procps ca-certificates          network facts, ps, TLS
#   docker.io apparmor                       the engine (apparmor_parser: the
#                                            first `docker run` fails without it)
#   python3-docker                           community.docker modules
#   busybox-static                           the verification image's rootfs
# (The stand-in NVML library is cross-compiled on the controller: no compiler
# on the node.)
packages=linux-image-powerpc64le,initramfs-tools,udev,kmod,systemd,systemd-sysv,dbus,openssh-server,python3,python3-apt,sudo,iproute2,procps,ca-certificates,docker.io,apparmor,python3-docker,busybox-static
# The apt lists stay in the image: a first `apt-get update` in the guest
# then fetches differences only (the full lists take minutes to parse under
# emulation).
# Units that would hold the dpkg lock or the console during a converge.
masked="apt-daily.timer apt-daily-upgrade.timer apt-daily.service apt-daily-upgrade.service"
# initramfs: only the drivers that find the root disk on this machine.
# MODULES=most makes update-initramfs (run under qemu-user here) take
# 25 minutes longer; crc32c_generic is needed by ext4's hook.
initramfs_modules="virtio_pci virtio_blk virtio_scsi sd_mod ext4 crc32c_generic"

# The compiler the scenario's prepare step builds the stand-in NVIDIA driver with, for the node's architecture.
ensure_cross_cc() {
    command -v powerpc64le-linux-gnu-gcc >/dev/null && [ -e /usr/powerpc64le-linux-gnu/include/stdio.h ] && return 0
    need_root "build (the cross compiler)"
    log "installing from Debian: gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross >&2
}

cmd_build() {
    ensure_cross_cc
    if [ "${PPC64LE_REBUILD:-0}" != 1 ] && [ -s "$image_dir/disk.img" ] && [ -s "$image_dir/vmlinux" ] \
        && [ -s "$image_dir/initrd.img" ] && [ -s "$image_dir/id_ed25519" ]; then
        log "cached: $image_dir"
        return 0
    fi
    need_root build
    ensure_binfmt
    mkdir -p "$cache_root"
    local work
    work=$(mktemp -d "$cache_root/build.XXXXXX")
    # shellcheck disable=SC2064
    trap "cleanup_build '$work'" EXIT
    ssh-keygen -q -t ed25519 -N '' -C "hpc.gpu_containers test bed" -f "$work/id_ed25519"

    local start end t_rootfs t_mkfs
    start=$(date +%s)
    log "building the ppc64el root filesystem (recipe $recipe_hash): about 7 minutes on 2 cores"
    # Hooks are single-quoted on purpose: mmdebstrap expands "$1", not this shell.
    # The guest's sources: the suite and its updates (the archive's security suite is not mirrored for it).
    DEBIAN_SOURCES=("deb $mirror $DEBIAN_SUITE main" "deb $mirror $DEBIAN_SUITE-updates main")
    # shellcheck disable=SC2016
    TESTBED_MODULES="$initramfs_modules" TESTBED_PUBKEY="$work/id_ed25519.pub" TESTBED_MASKED="$masked" \
    debian_rootfs ppc64el "$packages" "$work/rootfs" --mode=root \
        --aptopt='APT::Install-Recommends "false"' \
        --skip=cleanup/apt/lists \
        --setup-hook='mkdir -p "$1"/etc/initramfs-tools/conf.d "$1"/usr/share/initramfs-tools/modules.d' \
        --setup-hook='printf "MODULES=list\nRESUME=none\n" >"$1"/etc/initramfs-tools/conf.d/testbed.conf' \
        --setup-hook='printf "%s\n" $TESTBED_MODULES >"$1"/usr/share/initramfs-tools/modules.d/testbed' \
        --customize-hook='echo ppc64le-node >"$1"/etc/hostname' \
        --customize-hook='printf "127.0.0.1\tlocalhost\n" >"$1"/etc/hosts' \
        --customize-hook='printf "/dev/vda\t/\text4\trw,relatime\t0\t0\n" >"$1"/etc/fstab' \
        --customize-hook='printf "[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n" >"$1"/etc/systemd/network/10-testbed.network' \
        --customize-hook='rm -f "$1"/etc/resolv.conf; echo "nameserver 10.0.2.3" >"$1"/etc/resolv.conf' \
        --customize-hook='chroot "$1" systemctl enable systemd-networkd.service' \
        --customize-hook='chroot "$1" systemctl mask $TESTBED_MASKED' \
        --customize-hook='install -d -m 0700 "$1"/root/.ssh && install -m 0600 "$TESTBED_PUBKEY" "$1"/root/.ssh/authorized_keys' \
        --customize-hook='printf "UseDNS no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n" >"$1"/etc/ssh/sshd_config.d/testbed.conf' \
        --customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
        --customize-hook='cp "$1"/boot/vmlinux-* "$1"/../vmlinux && cp "$1"/boot/initrd.img-* "$1"/../initrd.img'
    end=$(date +%s); t_rootfs=$((end - start))
    log "root filesystem built in ${t_rootfs} s ($(du -sm "$work/rootfs" | cut -f1) MB)"

    start=$(date +%s)
    mkfs.ext4 -q -F -L testbed-root -d "$work/rootfs" "$work/disk.img" "$disk_size" >&2
    end=$(date +%s); t_mkfs=$((end - start))
    log "disk image made in ${t_mkfs} s ($(du -m "$work/disk.img" | cut -f1) MB used of $disk_size)"
    printf 'recipe=%s\nrootfs_s=%s\nmkfs_s=%s\ninitrd_bytes=%s\n' "$recipe_hash" "$t_rootfs" "$t_mkfs" \
        "$(stat -c %s "$work/initrd.img")" >"$work/build.txt"

    rm -rf "$work/rootfs"
    rm -rf "$image_dir"
    mkdir -p "$image_dir"
    mv "$work/disk.img" "$work/vmlinux" "$work/initrd.img" "$work/id_ed25519" "$work/id_ed25519.pub" \
        "$work/build.txt" "$image_dir/"
    cleanup_build "$work"
    trap - EXIT
    log "cached: $image_dir"
}
# <<< recipe

kernel_cmdline="root=/dev/vda rw console=hvc0 quiet"

run_dir() { echo "$cache_root/run/$1"; }

is_running() {
    local dir pid
    dir=$(run_dir "$1")
    [ -s "$dir/qemu.pid" ] || return 1
    pid=$(cat "$dir/qemu.pid")
    kill -0 "$pid" 2>/dev/null && grep -q qemu-system "/proc/$pid/cmdline" 2>/dev/null
}

ssh_opts() {
    local dir; dir=$(run_dir "$1")
    echo "-i $(cat "$dir/key") -p $(cat "$dir/port") -o BatchMode=yes -o StrictHostKeyChecking=no" \
         "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=10"
}

facts() {
    local dir; dir=$(run_dir "$1")
    printf 'PPC64LE_NAME=%s\nPPC64LE_SSH_HOST=127.0.0.1\nPPC64LE_SSH_PORT=%s\nPPC64LE_SSH_USER=root\n' "$1" "$(cat "$dir/port")"
    printf 'PPC64LE_SSH_KEY=%s\nPPC64LE_PID=%s\nPPC64LE_CONSOLE=%s\n' "$(cat "$dir/key")" "$(cat "$dir/qemu.pid")" "$dir/console.log"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The guestfwd relay: slirp starts it for each connection the guest opens
# to the forwarded address, with that connection as stdin/stdout.
write_relay() {
    cat >"$1" <<'PY'
import selectors
import socket
import sys

guest = socket.socket(fileno=0)
upstream = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
upstream.settimeout(None)
peer = {guest: upstream, upstream: guest}
selector = selectors.DefaultSelector()
for sock in peer:
    selector.register(sock, selectors.EVENT_READ)
open_sides = 2
while open_sides:
    for key, _ in selector.select():
        data = key.fileobj.recv(65536)
        if data:
            peer[key.fileobj].sendall(data)
        else:
            selector.unregister(key.fileobj)
            try:
                peer[key.fileobj].shutdown(socket.SHUT_WR)
            except OSError:
                pass
            open_sides -= 1
PY
}

cmd_start() {
    local name="$1" dir port netdev start elapsed rule guest host
    [[ "$name" =~ ^[a-z][a-z0-9-]{0,62}$ ]] || die "node name must be a lower-case host name, not '$name'"
    dir=$(run_dir "$name")
    if is_running "$name"; then
        log "$name is already running"
        facts "$name"
        return 0
    fi
    cmd_build
    command -v qemu-system-ppc64 >/dev/null || die "qemu-system-ppc64 is missing: apt-get install qemu-system-ppc (from bookworm-backports where qemu-utils 10 is installed)"
    command -v qemu-img >/dev/null || die "qemu-img is missing: apt-get install qemu-utils"
    rm -rf "$dir"
    mkdir -p "$dir"
    port="${PPC64LE_SSH_PORT:-$(free_port)}"
    echo "$port" >"$dir/port"
    echo "$image_dir/id_ed25519" >"$dir/key"
    echo "$recipe_hash" >"$dir/recipe"
    # A fresh node on every start: the cached image stays read-only.
    qemu-img create -q -f qcow2 -b "$image_dir/disk.img" -F raw "$dir/overlay.qcow2"

    netdev="user,id=n0,hostfwd=tcp:127.0.0.1:${port}-:22"
    if [ -n "${PPC64LE_GUESTFWD:-}" ]; then
        write_relay "$dir/relay.py"
    fi
    for rule in ${PPC64LE_GUESTFWD:-}; do
        guest="${rule%%=*}"; host="${rule#*=}"
        [[ "$guest" =~ ^[0-9.]+:[0-9]+$ && "$host" =~ ^[0-9.]+:[0-9]+$ ]] \
            || die "PPC64LE_GUESTFWD: '$rule' is not GUEST_IP:PORT=HOST_IP:PORT"
        # cmd: is run once per connection (a chardev target would serve one only).
        netdev+=",guestfwd=tcp:${guest}-cmd:python3 -u $dir/relay.py ${host%:*} ${host##*:}"
    done
    local virtfs=() n=0 tag path
    for rule in ${PPC64LE_VIRTFS:-}; do
        tag="${rule%%=*}"; path="${rule#*=}"
        [ -d "$path" ] || die "PPC64LE_VIRTFS: '$path' is not a directory"
        # passthrough: the guest's owners and modes are stored as they are
        # (qemu runs as root), as on an NFS export with no_root_squash.
        virtfs+=(-virtfs "local,path=$path,mount_tag=$tag,security_model=passthrough,id=fs$n")
        n=$((n + 1))
    done

    start=$(date +%s)
    log "booting $name (POWER9, pseries, TCG; -m ${PPC64LE_MEMORY:-1024} -smp ${PPC64LE_SMP:-2}), sshd on 127.0.0.1:$port"
    qemu-system-ppc64 \
        -name "$name" \
        -M pseries,x-vof=on,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off \
        -cpu POWER9 -m "${PPC64LE_MEMORY:-1024}" -smp "${PPC64LE_SMP:-2}" \
        -accel tcg,thread=multi,tb-size=256 \
        -display none -vga none -nodefaults -monitor none \
        -serial "file:$dir/console.log" \
        -kernel "$image_dir/vmlinux" -initrd "$image_dir/initrd.img" \
        -append "$kernel_cmdline systemd.hostname=$name" \
        -drive "file=$dir/overlay.qcow2,if=none,id=d0,format=qcow2,cache=unsafe" \
        -device virtio-blk-pci,drive=d0 \
        -netdev "$netdev" -device virtio-net-pci,netdev=n0,romfile= \
        -device virtio-rng-pci \
        "${virtfs[@]}" \
        -daemonize -pidfile "$dir/qemu.pid"

    local timeout="${PPC64LE_BOOT_TIMEOUT:-900}"
    # shellcheck disable=SC2046
    until ssh $(ssh_opts "$name") root@127.0.0.1 true 2>/dev/null; do
        elapsed=$(( $(date +%s) - start ))
        is_running "$name" || die "qemu exited during boot; console: $dir/console.log"
        if [ "$elapsed" -ge "$timeout" ]; then
            log "sshd did not answer within ${timeout} s; last console lines:"
            tail -n 20 "$dir/console.log" >&2 || true
            cmd_stop "$name"
            exit 1
        fi
        sleep 2
    done
    elapsed=$(( $(date +%s) - start ))
    echo "$elapsed" >"$dir/boot_s"
    log "$name answers on SSH after ${elapsed} s"
    facts "$name"
}

cmd_stop() {
    local name="$1" dir pid
    dir=$(run_dir "$name")
    if is_running "$name"; then
        pid=$(cat "$dir/qemu.pid")
        # A clean shutdown first (the overlay is thrown away either way, so
        # this is only about not leaving qemu behind), then SIGTERM.
        # shellcheck disable=SC2046
        ssh $(ssh_opts "$name") root@127.0.0.1 'systemctl poweroff --no-block' >/dev/null 2>&1 || true
        for _ in $(seq 1 30); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 1 10); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
        fi
        log "$name stopped"
    else
        log "$name is not running"
    fi
    rm -rf "$dir"
}

cmd_status() {
    local name="$1"
    if is_running "$name"; then
        facts "$name"
    else
        log "$name is not running (image: $( [ -s "$image_dir/disk.img" ] && echo "cached, $image_dir" || echo "not built, recipe $recipe_hash"))"
        return 3
    fi
}

action="${1:-}"
name="${2:-ppc64le-node}"
case "$action" in
    build) cmd_build; echo "$image_dir" ;;
    start) cmd_start "$name" ;;
    stop) cmd_stop "$name" ;;
    status) cmd_status "$name" ;;
    ssh)
        shift 2 || shift $#
        is_running "$name" || die "$name is not running"
        # shellcheck disable=SC2046
        exec ssh $(ssh_opts "$name") root@127.0.0.1 "$@" ;;
    *) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
