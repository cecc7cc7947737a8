#!/usr/bin/env bash
# A stand-in for the sandbox of the server's systemd unit (templates/ivcuda-server@.service) on a
# machine without systemd: its namespaces, mounts, device list, memory limit and capability bounding
# set, made with util-linux (unshare, mount, setpriv) as root. gpu/lib.sh puts it in front of the
# direct launcher's sandbox (setpriv --no-new-privs, ivcuda-syscall-filter, core limit, umask) when
# SERVER_SANDBOX=2: whether the real driver works inside what the unit allows. It is not systemd:
# docs/threat-model.md ("The server process") says what it covers and what it does not.
#
#   gpu/unit-standin.sh [--rw PATH]... [--ro PATH]... [--cgroup NAME] -- PROGRAM [ARG...]
#       prints one line per unit setting on stderr ("unit-standin: Setting: applied (...)" or
#       "not applied (why)"), then execs PROGRAM: the same process all along, so whoever started
#       this script signals and waits for PROGRAM itself.
#       --rw  a path PROGRAM writes (the unit's ReadWritePaths=): its run directory, its region's
#             directory when that is not /dev/shm
#       --ro  a path PROGRAM reads that a covered directory would hide (/tmp, /home, /root: where a
#             test tree keeps its JRE, jar or tools; an installed server's files are under /usr)
#       --cgroup  the name of the cgroup made for MemoryMax= [ivcuda-standin-PID]
#   gpu/unit-standin.sh --check
#       the stand-in's own test: a probe runs inside it; "ok"/"FAIL" lines, exit 1 on any FAIL
#   gpu/unit-standin.sh --remove-cgroup NAME
#       removes the cgroup NAME made for MemoryMax= once its process is gone (no-op if none)
#
# Every step either works or says why not on its line; none waits on anything.

self=$(readlink -f "${BASH_SOURCE[0]}")
MEMORY_MAX=$((8 << 30)) # the unit's MemoryMax=8G
say() { printf 'unit-standin: %s\n' "$*" >&2; }

# The cgroup v2 hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host.
cgroup_v2_root() {
    local m
    for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        [ "$(stat -f -c %T "$m" 2>/dev/null)" = cgroup2fs ] && { echo "$m"; return 0; }
    done
    return 1
}

# MemoryMax=8G: a child cgroup of the hierarchy's root with memory.max 8G, this process moved into
# it (before unshare: the exec'd program stays there, and the pages of the region it touches first
# are charged to it, as under the unit).
apply_memory_max() {
    local name=$1 root dir err
    if ! root=$(cgroup_v2_root); then
        say "MemoryMax=8G: not applied (no writable cgroup v2: none mounted)"
        return
    fi
    dir=$root/$name
    if ! err=$(mkdir "$dir" 2>&1); then
        say "MemoryMax=8G: not applied (no writable cgroup v2: $err)"
        return
    fi
    # the memory controller must be enabled in the parent for memory.max to exist in the child
    if ! grep -qw memory "$root/cgroup.controllers"; then
        rmdir "$dir"
        say "MemoryMax=8G: not applied (no writable cgroup v2 with a memory controller: $root has controllers '$(cat "$root/cgroup.controllers")')"
        return
    fi
    [ -f "$dir/memory.max" ] || err=$({ echo +memory >"$root/cgroup.subtree_control"; } 2>&1)
    if [ ! -f "$dir/memory.max" ]; then
        rmdir "$dir"
        say "MemoryMax=8G: not applied (no writable cgroup v2: writing +memory to $root/cgroup.subtree_control failed: ${err##*: })"
        return
    fi
    if ! err=$({ echo "$MEMORY_MAX" >"$dir/memory.max" && echo $$ >"$dir/cgroup.procs"; } 2>&1); then
        rmdir "$dir" 2>/dev/null
        say "MemoryMax=8G: not applied ($dir: $err)"
        return
    fi
    say "MemoryMax=8G: applied (cgroup $dir, memory.max $(cat "$dir/memory.max"), this process moved into it)"
}

remove_cgroup() {
    local root
    root=$(cgroup_v2_root) || return 0
    [ -d "$root/$1" ] && rmdir "$root/$1" 2>/dev/null
    return 0
}

# ---- inside the new namespaces ------------------------------------------------------------------

# is $1 the path $2 or below it
is_under() { [ "$1" = "$2" ] || [[ "$1" == "${2%/}"/* ]]; }

# The device nodes DevicePolicy=closed + DeviceAllow= let through: name and whether read-only.
allowed_devices() {
    local n
    # DevicePolicy=closed's pseudo devices (systemd.resource-control(5))
    for n in null zero full random urandom tty ptmx; do echo "$n rw"; done
    for n in nvidiactl nvidia-uvm nvidia-uvm-tools; do echo "$n rw"; done
    # DeviceAllow=/dev/nvidia0 rw ... /dev/nvidia15 rw
    for n in $(seq 0 15); do echo "nvidia$n rw"; done
    # DeviceAllow=char-nvidia-caps r
    for n in /dev/nvidia-caps/*; do [ -c "$n" ] && echo "${n#/dev/} r"; done
}

# DevicePolicy=closed + DeviceAllow=: a fresh /dev with only those nodes (same major:minor, owner
# and mode; write bits cleared for read-only ones), made with mknod, or bound from the host's /dev
# (staged in $1) where mknod is refused. The unit leaves the host's /dev in place and filters device
# access in the cgroup: a tmpfs with the allowed nodes is what root without systemd can do.
make_dev() {
    local stage=$1 name access made=() missing=() bound=() major minor mode owner allowed
    # no process substitution from here on: it reads through /dev/fd, which is being replaced
    allowed=$(allowed_devices)
    if ! err=$(mount -t tmpfs -o mode=0755,nosuid,noexec,size=1m tmpfs /dev 2>&1); then
        say "DevicePolicy=closed, DeviceAllow=: not applied (tmpfs on /dev: $err)"
        return 1
    fi
    while read -r name access; do
        if [ ! -c "$stage/$name" ]; then
            [[ "$name" == nvidia[0-9]* ]] || missing+=("$name")
            continue
        fi
        read -r major minor mode owner <<<"$(stat -L -c '%t %T %a %u:%g' "$stage/$name")"
        [ "$access" = r ] && mode=$(printf '%o' $((8#$mode & 8#5555)))
        mkdir -p "$(dirname "/dev/$name")"
        # (no 2>/dev/null here: on the fresh /dev that would create a plain file /dev/null)
        if err=$(mknod -m "$mode" "/dev/$name" c $((16#$major)) $((16#$minor)) 2>&1 && chown "$owner" "/dev/$name" 2>&1); then
            made+=("$name")
        else
            rm -f "/dev/$name"
            : >"/dev/$name"
            mount --bind "$stage/$name" "/dev/$name" && bound+=("$name")
        fi
    done <<<"$allowed"
    ln -s /proc/self/fd /dev/fd
    ln -s /proc/self/fd/0 /dev/stdin
    ln -s /proc/self/fd/1 /dev/stdout
    ln -s /proc/self/fd/2 /dev/stderr
    mkdir /dev/shm
    say "DevicePolicy=closed, DeviceAllow=: applied (fresh /dev: ${made[*]:-no node made}${bound[*]:+; bound, mknod refused: ${bound[*]}}${missing[*]:+; not on this host: ${missing[*]}})"
}

# ProtectSystem=strict: every mount read-only (remount,bind,ro keeps each mount's other flags)
# but PrivateTmp's, the writable paths and /proc (set up after this). ProtectKernelTunables and
# ProtectControlGroups make /sys and /sys/fs/cgroup read-only: they are among "every mount" here.
# /dev, which the unit leaves writable (an API file system), is read-only too: its user cannot
# write it there, root could here.
remount_read_only() {
    local -A opts_of=()
    local mp opts writable failed=() count=0 rw
    # the last line for a mount point is the mount on top
    while read -r _ _ _ _ mp opts _; do
        opts_of[$(printf '%b' "$mp")]=$opts
    done </proc/self/mountinfo
    for mp in "${!opts_of[@]}"; do
        is_under "$mp" /proc && continue
        # the --ro paths kept visible: read-only even inside a writable one
        for rw in "${READ_ONLY[@]}"; do [ "$mp" = "$rw" ] && continue 2; done
        writable=0
        for rw in "${WRITABLE[@]}"; do is_under "$mp" "$rw" && writable=1; done
        [ "$writable" = 1 ] && continue
        [ -e "$mp" ] || continue # hidden under another mount
        opts=${opts_of[$mp]}
        case ",$opts," in *,ro,*) count=$((count + 1)); continue ;; esac
        opts=${opts#rw}
        if err=$(mount --options-source disable -o "remount,bind,ro$opts" "$mp" 2>&1); then
            count=$((count + 1))
        else
            failed+=("$mp ($err)")
        fi
    done
    for mp in "${READ_ONLY[@]}"; do
        if err=$(mount --options-source disable -o remount,bind,ro,nosuid,nodev "$mp" 2>&1); then
            count=$((count + 1))
        else
            failed+=("$mp ($err)")
        fi
    done
    if [ "${#failed[@]}" = 0 ]; then
        say "ProtectSystem=strict, ProtectHome=yes (read-only), ProtectKernelTunables=yes (/sys), ProtectControlGroups=yes: applied ($count mount points read-only; writable: ${WRITABLE[*]})"
    else
        say "ProtectSystem=strict: partly applied ($count mount points read-only; still writable: ${failed[*]})"
    fi
}

inner() {
    local cgroup_note=$1 rw=() ro=() path fd
    shift
    while [ $# -gt 0 ]; do
        case $1 in
            --rw) rw+=("$2"); shift 2 ;;
            --ro) ro+=("$2"); shift 2 ;;
            --) shift; break ;;
            *) break ;;
        esac
    done
    say "PrivateNetwork=yes, PrivateIPC=yes, ProtectHostname=yes: applied (unshare --net --ipc --uts --mount --propagation private)"
    # systemd brings the private network's lo up
    if command -v ip >/dev/null && err=$(ip link set lo up 2>&1); then
        say "PrivateNetwork=yes: lo up, no other interface"
    else
        say "PrivateNetwork=yes: lo left down (${err:-no ip command}); no other interface"
    fi

    # The paths kept visible, opened before anything covers them, bound back from those handles.
    # /dev/shm: the region. The unit writes it under ProtectSystem=strict because /dev is an API file
    # system ProtectSystem leaves alone, and DevicePolicy= governs device nodes only (the unit's
    # comment; systemd.exec(5), ProtectSystem=).
    local keep=(/dev/shm "${rw[@]}" "${ro[@]}") keep_fd=() keep_is_dir=() i order
    WRITABLE=(/tmp /var/tmp /dev/shm)
    READ_ONLY=()
    for path in "${rw[@]}"; do WRITABLE+=("$(readlink -f "$path")"); done
    for path in "${ro[@]}"; do READ_ONLY+=("$(readlink -f "$path")"); done
    for i in "${!keep[@]}"; do
        path=$(readlink -f "${keep[$i]}")
        if [ "$path" = / ] || { [ ! -d "$path" ] && [ ! -f "$path" ]; }; then
            say "FAILED: $path is not a directory or a file other than /: refused as a kept path"
            exit 125
        fi
        keep[$i]=$path
        [ -d "$path" ] && keep_is_dir[$i]=1
        exec {fd}<"$path"
        keep_fd[$i]=$fd
    done

    # PrivateTmp=yes
    local tmps=(/tmp)
    [ -d /var/tmp ] && [ ! -L /var/tmp ] && tmps+=(/var/tmp)
    for path in "${tmps[@]}"; do
        if ! err=$(mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$path" 2>&1); then
            say "FAILED: PrivateTmp=yes: tmpfs on $path: $err"
            exit 125
        fi
    done
    say "PrivateTmp=yes: applied (empty tmpfs on ${tmps[*]})"

    # the host's /dev, staged in the private /tmp while the fresh one is made
    local stage=/tmp/.unit-standin-host-dev
    mkdir "$stage" && mount --bind /dev "$stage" || { say "FAILED: could not stage the host's /dev"; exit 125; }
    make_dev "$stage"
    umount "$stage" && rmdir "$stage"

    # ProtectHome=yes: empty, read-only (below) in place of /home, /root and /run/user
    local homes=()
    for path in /home /root /run/user; do
        [ -d "$path" ] && [ ! -L "$path" ] || continue
        if err=$(mount -t tmpfs -o mode=0755,nosuid,nodev,noexec,size=1m tmpfs "$path" 2>&1); then
            homes+=("$path")
        else
            say "ProtectHome=yes: not applied to $path ($err)"
        fi
    done
    say "ProtectHome=yes: applied (empty tmpfs on ${homes[*]:-nothing})"

    # the kept paths, parents before children
    local bound=()
    order=$(for i in "${!keep[@]}"; do echo "${#keep[$i]} $i"; done | sort -n | cut -d' ' -f2)
    for i in $order; do
        path=${keep[$i]}
        if [ -n "${keep_is_dir[$i]:-}" ]; then mkdir -p "$path"; else mkdir -p "$(dirname "$path")" && touch "$path"; fi
        if err=$(mount --no-canonicalize --bind "/proc/self/fd/${keep_fd[$i]}" "$path" 2>&1); then
            bound+=("$path")
        else
            say "FAILED: binding $path back: $err"
            exit 125
        fi
    done
    for fd in "${keep_fd[@]}"; do exec {fd}<&-; done
    say "ReadWritePaths=: ${WRITABLE[*]}; read-only paths kept visible: ${ro[*]:-none}"

    remount_read_only

    # A /proc of this mount namespace, for ProtectKernelTunables below (same pid namespace: the pids
    # the server reads are the host's, as under the unit, which has no PrivatePIDs=). No hidepid: the
    # unit leaves ProtectProc at its default, since its doorbell peer check reads QEMU's cmdline
    # (templates/ivcuda-server@.service says why).
    if err=$(mount -t proc -o nosuid,nodev,noexec proc /proc 2>&1); then
        say "ProtectProc (default, as the unit): fresh /proc ($(awk '$5 == "/proc" { o = $NF } END { print o }' /proc/self/mountinfo))"
    else
        say "ProtectProc (default, as the unit): no fresh /proc (mount -t proc: $err)"
    fi
    # ProtectKernelTunables=yes: the /proc entries systemd makes read-only (systemd.exec(5))
    local tunables=()
    for path in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus /proc/fs /proc/acpi /proc/asound /proc/scsi \
        /proc/latency_stats /proc/timer_list /proc/timer_stats /proc/mtrr /proc/apm; do
        [ -e "$path" ] || continue
        mount --bind "$path" "$path" 2>/dev/null && mount -o remount,bind,ro "$path" 2>/dev/null && tunables+=("$path")
    done
    say "ProtectKernelTunables=yes: /proc read-only where systemd makes it so: ${tunables[*]:-none}"
    say "ProtectKernelModules, ProtectKernelLogs, ProtectClock, RestrictRealtime: by the empty bounding set below (no CAP_SYS_MODULE, CAP_SYSLOG, CAP_SYS_TIME, CAP_SYS_NICE), no /dev/kmsg, and the syscall filter of SERVER_SANDBOX=1 where it runs"
    [ -n "$cgroup_note" ] && say "$cgroup_note"

    # WorkingDirectory: a system service starts in /
    cd / || exit 125
    # CapabilityBoundingSet= AmbientCapabilities=: root keeps no capability after the exec
    # (execve gives root its bounding set, now empty). UNIT_STANDIN_CAPS=keep: keep them (to tell a
    # driver that needs one from the rest of the sandbox).
    if [ "${UNIT_STANDIN_CAPS:-}" = keep ]; then
        say "CapabilityBoundingSet=: not applied (UNIT_STANDIN_CAPS=keep)"
        exec "$@"
    fi
    say "CapabilityBoundingSet=, AmbientCapabilities=: applied (setpriv --inh-caps -all --bounding-set -all)"
    exec setpriv --inh-caps -all --bounding-set -all -- "$@"
}

# ---- --check: the stand-in's own test -----------------------------------------------------------

# Run inside the stand-in by --check: one "ok"/"FAIL" line per property.
mount_opts() { awk -v m="$1" '$5 == m { o = $6 } END { print o }' /proc/self/mountinfo; }
own_namespaces() {
    local n host
    for n in net ipc uts mnt; do
        host=PROBE_NS_$n
        [ "$(readlink "/proc/self/ns/$n")" != "${!host}" ] || return 1
    done
}
proc_is_fresh() { [ "$(awk '$5 == "/proc"' /proc/self/mountinfo | wc -l)" -ge 2 ]; }
no_capability() { ! grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status | grep -qv ':\s*0*$'; }
only_allowed_nodes() {
    ! find /dev -xdev -type c |
        grep -qvE '^/dev/(null|zero|full|random|urandom|tty|ptmx|nvidiactl|nvidia-uvm|nvidia-uvm-tools|nvidia([0-9]|1[0-5])|nvidia-caps/.*)$'
}
probe() {
    local failed=0 cgroup
    check() { if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; failed=1; fi; }
    check "the root is read-only (touch /usr/ivcuda-standin-probe fails)" eval '! touch /usr/ivcuda-standin-probe 2>/dev/null'
    check "/etc is read-only" eval '! touch /etc/ivcuda-standin-probe 2>/dev/null'
    check "a --rw path is writable" touch "$PROBE_RW/inside"
    check "a --ro path is read-only" eval '! touch "$PROBE_RO" 2>/dev/null'
    check "/dev/shm is writable (the region)" touch "/dev/shm/$PROBE_SHM"
    check "/tmp is private (the host's file is not there)" test ! -e "$PROBE_HOST_TMP"
    check "/tmp is writable" touch /tmp/ivcuda-standin-probe
    check "/home and /root are empty" eval '[ -z "$(ls -A /home)" ] && [ -z "$(ls -A /root)" ]'
    check "/root is read-only" eval '! touch /root/ivcuda-standin-probe 2>/dev/null'
    check "/dev holds no block device" test -z "$(find /dev -xdev -type b)"
    check "/dev holds only the unit's device nodes" only_allowed_nodes
    check "/dev/null works" eval 'echo x >/dev/null'
    check "/dev is read-only" eval '! touch /dev/ivcuda-standin-probe 2>/dev/null'
    check "the network namespace has lo only" test "$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')" = lo
    check "own network, IPC, UTS and mount namespaces" own_namespaces
    check "the host's System V shared memory segment is not visible" eval '! grep -qw "$PROBE_SHMID" /proc/sysvipc/shm'
    check "no capability (effective, permitted, bounding)" no_capability
    check "/proc is a fresh mount of this namespace" proc_is_fresh
    check "/sys is read-only" eval '[[ $(mount_opts /sys) == ro* ]]'
    check "/proc/sys is read-only" eval '[[ $(mount_opts /proc/sys) == ro* ]]'
    cgroup=$(sed -n 's/^0:://p' /proc/self/cgroup)
    if [ -n "$PROBE_CGROUP_ROOT" ] && [ "${cgroup##*/}" = "$PROBE_CGROUP_NAME" ]; then
        check "memory.max is 8G" test "$(cat "$PROBE_CGROUP_ROOT$cgroup/memory.max")" = "$MEMORY_MAX"
    else
        echo "skip memory.max: the stand-in did not apply MemoryMax= here (its line above says why)"
    fi
    return $failed
}

run_check() {
    local dir out status failed=0 shmid log n
    if [ "$(id -u)" != 0 ]; then echo "skip unit-standin --check: needs root"; return 0; fi
    dir=$(mktemp -d /tmp/ivcuda-standin-check.XXXXXX) || return 1
    echo host >"$dir/host-file"
    echo ro >"$dir/ro-file"
    shmid=$(ipcmk -M 4096 2>/dev/null | grep -o '[0-9]*$')
    log=$dir/standin.log
    export PROBE_RW=$dir/rw PROBE_RO=$dir/ro-file PROBE_SHM=ivcuda-standin-probe-$$ PROBE_HOST_TMP=$dir/host-file
    export PROBE_SHMID=${shmid:-none} PROBE_CGROUP_NAME=ivcuda-standin-check-$$ PROBE_CGROUP_ROOT
    PROBE_CGROUP_ROOT=$(cgroup_v2_root) || PROBE_CGROUP_ROOT=
    mkdir "$PROBE_RW"
    for n in net ipc uts mnt; do export "PROBE_NS_$n=$(readlink "/proc/self/ns/$n")"; done
    # a path under /tmp kept writable, a file there kept read-only, the rest of the host's /tmp hidden
    out=$("$self" --rw "$PROBE_RW" --ro "$PROBE_RO" --ro "$self" --cgroup "$PROBE_CGROUP_NAME" -- bash "$self" --probe 2>"$log")
    status=$?
    cat "$log"
    echo "$out"
    [ "$status" = 0 ] || failed=1
    check_host() { if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; failed=1; fi; }
    check_host "the stand-in ran the probe" eval '! grep -q "^unit-standin: FAILED" "$log" && grep -q "^ok" <<<"$out"'
    check_host "nothing reached the host's /usr or /etc" test ! -e /usr/ivcuda-standin-probe -a ! -e /etc/ivcuda-standin-probe
    check_host "the --rw path's file is on the host" test -e "$PROBE_RW/inside"
    check_host "the --ro file is unchanged" test "$(cat "$PROBE_RO")" = ro
    check_host "the /dev/shm file is on the host" test -e "/dev/shm/$PROBE_SHM"
    check_host "the private /tmp's file is not on the host" test ! -e /tmp/ivcuda-standin-probe
    rm -f "/dev/shm/$PROBE_SHM" /usr/ivcuda-standin-probe /etc/ivcuda-standin-probe
    [ -n "$shmid" ] && ipcrm -m "$shmid"
    remove_cgroup "$PROBE_CGROUP_NAME"
    rm -rf "$dir"
    echo "unit-standin --check: $([ "$failed" = 0 ] && echo PASS || echo FAIL)"
    return $failed
}

# ---- arguments ----------------------------------------------------------------------------------

case ${1:-} in
    --check) run_check; exit ;;
    --probe) probe; exit ;;
    --remove-cgroup) remove_cgroup "${2:?--remove-cgroup NAME}"; exit ;;
    --inner) shift; inner "$@"; exit 125 ;;
esac
if [ "$(id -u)" != 0 ]; then
    say "FAILED: needs root (mount namespaces and mounts without a user namespace, as systemd makes them)"
    exit 125
fi
args=()
cgroup_name=ivcuda-standin-$$
while [ $# -gt 0 ]; do
    case $1 in
        --rw | --ro) [ $# -ge 2 ] || { say "FAILED: $1 needs a path"; exit 125; }; args+=("$1" "$2"); shift 2 ;;
        --cgroup) cgroup_name=${2:?--cgroup NAME}; shift 2 ;;
        --) shift; break ;;
        *) say "FAILED: unknown option $1 (usage: the comment at the top of $self)"; exit 125 ;;
    esac
done
[ $# -gt 0 ] || { say "FAILED: no program after --"; exit 125; }
if ! err=$(unshare --net --ipc --uts --mount --propagation private -- true 2>&1); then
    say "FAILED: PrivateNetwork, PrivateIPC, ProtectHostname and the mount namespace: unshare: $err"
    exit 125
fi
# MemoryMax= before unshare, in the host's cgroup tree; its line is printed with the others
cgroup_note=$(apply_memory_max "$cgroup_name" 2>&1)
exec unshare --net --ipc --uts --mount --propagation private -- bash "$self" --inner "${cgroup_note#unit-standin: }" "${args[@]}" -- "$@"
