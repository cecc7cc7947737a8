#!/usr/bin/env bash
# Doorbell mode through a back-end domain, end to end under QEMU TCG without libvirt
# (docs/backend-domains.md, "Doorbell mode through a back-end"): the host's hook (fed the domains'
# XML as libvirt feeds it) prepares a doorbell back-end and starts its slot's ivshmem relay; the
# back-end VM (q35 with a virtual IOMMU, the agent, ivcuda-guest-irqd, the cuda-server on its
# host-memory backend) and a doorbell front-end VM both connect to the relay as QEMU peers. The
# front-end is what a real one is: q35 with a virtual IOMMU too, ivcuda-guest-irqd owning its slot
# device through vfio-pci (vm/irqd-before.sh, vm/irqd-after.sh, as VmIT's doorbell domain), the
# guest library sleeping on its channel's MSI-X vector (IVCUDA_STATS=1 IVCUDA_SPIN_US=20), the
# probe (vm/frontend-probe.c) running its rounds through the back-end. Passes when:
#   - the relay admitted the back-end's QEMU as peer 0 and the front-end's as peer 1;
#   - the agent started the interrupt daemon and the server took the slot device's MSI-X vectors;
#   - the server was woken by the front-end's rings ("doorbell: first ring on vector N") and the
#     back-end counted vfio-msix interrupts (/proc/interrupts) after its server became ready;
#   - the server rang the front-end ("doorbell: first interrupt to the front-end on vector N"),
#     the front-end's vfio-msix count grew by N > 0 during its probe (beyond the daemon's
#     self-test rings) and its library was woken by those interrupts (IVCUDA_STATS: "woken by an
#     interrupt: M", M > 0 summed over the probe's processes);
#   - every probe round was ok;
#   - after both releases no relay runs and its socket is gone.
#
# With --restart-backend the back-end is stopped while the front-end runs (its QEMU killed, as a
# destroy does; the hook's release) and brought back (prepare, started, a new QEMU) after the
# front-end's probe saw the gap; the probe (--rounds 0 --recovered-rounds 3) stops by itself after
# three ok rounds in a row following the errors. Passes when besides the checks above (every round
# ok excepted): the probe's rounds were ok before the stop; every round during the gap failed with a
# clean CUDA error (CUDA_ERROR_DEVICE_UNAVAILABLE, _NOT_INITIALIZED or _OUT_OF_MEMORY: no hang, no
# crash, no mismatch); the relay admitted the new back-end QEMU as peer 0 again (the front-end's
# QEMU, never restarted, kept peer 1); the probe recovered; the restarted back-end's server was
# woken by the front-end's rings and rang the front-end. (BackendDomainsIT does the same through
# libvirt for plain front-ends.)
#
# With --frontend-mode plain the front-end is a plain one on the same doorbell back-end (an
# ivshmem-plain device on the slot's file, no IOMMU; its server polls): the same run's figures
# without interrupts, for docs/benchmarks/backend-domains.md; the interrupt checks are then left out.
#
# usage: vm/backend-doorbell.sh [--out DIR] [--rounds N] [--frontend-mode doorbell|plain] [--restart-backend]
#   run from the repository root after `mvn -B -q package -DskipTests` (the hook's, the server's
#   and the agent's jars with lib/, the guest library and ivcuda-guest-irqd); QEMU, gcc, and what
#   vm/build-guest.sh needs. DIR (default ./out/backend-doorbell) gets the consoles and logs.
# Exit status: 0 passed, 1 a check failed, 2 could not run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$root/out/backend-doorbell
rounds=6
frontend_mode=doorbell
restart=0
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --frontend-mode) frontend_mode=$2; shift 2 ;;
        --restart-backend) restart=1; shift ;;
        *) echo "usage: $0 [--out DIR] [--rounds N] [--frontend-mode doorbell|plain] [--restart-backend]" >&2; exit 2 ;;
    esac
done
case $frontend_mode in doorbell | plain) ;; *) echo "$0: --frontend-mode doorbell or plain" >&2; exit 2 ;; esac
jar=$root/cuda-server/target/cuda-server.jar
agent=$root/backend-agent/target/backend-agent.jar
for f in "$jar" "$agent" "$root/libvirt-hook/target/libvirt-hook.jar" guest/target/libcuda.so.1 guest/target/ivcuda-guest-irqd; do
    [ -f "$f" ] || { echo "$0: no $f: build first (mvn -B -q package -DskipTests)" >&2; exit 2; }
done
mkdir -p "$out/logs"
logs=$(cd "$out/logs" && pwd)
rm -f "$logs"/*.log # a console of an earlier run must not answer this run's waits
work=$(mktemp -d /tmp/ivcuda-bedoorbell.XXXXXX)
B=6976635a-0000-4000-8000-0000000bd001
F=6976635a-0000-4000-8000-0000000fd001
size_m=64
host=$work/host
shm=$host/shm
run=$host/run
socket=$run/relay-$B-slot0.sock
pids=()
failed=0
check() { # description, command...
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failed=1; fi
}
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    # whatever the hook started and a check did not get to stop
    hook be release end <"$host/backend.xml" 2>/dev/null || true
    hook fe release end <"$host/frontend.xml" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=vm/backend-lib.sh
. vm/backend-lib.sh
java_opts=$backend_java_opts
mkdir -p "$shm" "$run" "$host/state" "$host/log"
{
    echo "runtime.dir=$run"
    echo "state.dir=$host/state"
    echo "log.dir=$host/log"
    echo "shm.dir=$shm"
    echo "server.user=$(id -un)"
    echo "qemu.group=$(id -gn)"
    echo "server.command=java $java_opts -jar $jar"
} >"$host/ivcuda.properties"
# the provisioner's placement, as it writes it at define
echo "$B 0 $F fe" >"$host/state/backend-slots"
doorbell_shmem() { printf "<shmem name='ivcuda-%s-slot0'><model type='ivshmem-doorbell'/><server path='%s'/><msi vectors='32' ioeventfd='on'/></shmem>" "$B" "$socket"; }
domain() { # name uuid attributes devices
    printf "<domain type='qemu'><name>%s</name><uuid>%s</uuid><metadata><ivcuda:gpu xmlns:ivcuda=\"https://ivcuda.dev/xmlns/domain/1\" %s/></metadata><devices>%s</devices></domain>\n" "$@"
}
domain be "$B" "role=\"backend\" slots=\"1\" size=\"${size_m}M\" mode=\"doorbell\"" \
    "<shmem name='ivcuda-$B-control'><model type='ivshmem-plain'/><size unit='M'>1</size></shmem>$(doorbell_shmem)" >"$host/backend.xml"
if [ "$frontend_mode" = doorbell ]; then
    domain fe "$F" "backend=\"be\" mode=\"doorbell\"" "$(doorbell_shmem)" >"$host/frontend.xml"
    # q35 with a virtual IOMMU and interrupt remapping, as the back-end: ivcuda-guest-irqd takes the
    # slot device through vfio-pci (Debian's kernel has no vfio no-IOMMU mode); ivcuda.irqd turns on
    # vm/irqd-before.sh and vm/irqd-after.sh
    frontend_device=(-machine q35 -device intel-iommu,intremap=on
        -chardev "socket,id=slot0,path=$socket" -device ivshmem-doorbell,chardev=slot0,vectors=32,ioeventfd=on)
    frontend_cmdline=" intel_iommu=on no_timer_check ivcuda.irqd"
else
    domain fe "$F" "backend=\"be\"" "<shmem name='ivcuda-$B-slot0'><model type='ivshmem-plain'/><size unit='M'>$size_m</size></shmem>" >"$host/frontend.xml"
    frontend_device=(-object "memory-backend-file,id=slot0,mem-path=$shm/ivcuda-$B-slot0,size=${size_m}M,share=on"
        -device ivshmem-plain,memdev=slot0)
    frontend_cmdline=
fi
hook() { # name op subop < XML
    IVCUDA_CONFIG=$host/ivcuda.properties IVCUDA_HOME=$root/libvirt-hook/target \
        sh "$root/libvirt-hook/src/main/sh/50-ivcuda" "$1" "$2" "$3" - >>"$logs/hook.log" 2>&1
}
backend_vm() { # console: the back-end's QEMU in the background, its pid in $backend_pid
    # the IOMMU first: QEMU wants it before the devices it translates for; interrupt remapping, or
    # vfio_iommu_type1 refuses MSI-X (VmIT's doorbell domain has the same)
    qemu-system-x86_64 -accel tcg -machine q35 -nodefaults -display none -no-reboot -m 1024 -uuid "$B" \
        -device intel-iommu,intremap=on -serial "file:$1" \
        -kernel "$out/backend-guest/vmlinuz" -initrd "$out/backend-guest/initramfs.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet intel_iommu=on no_timer_check" \
        -object "memory-backend-file,id=control,mem-path=$shm/ivcuda-$B-control,size=1M,share=on" \
        -device ivshmem-plain,memdev=control,addr=0x4 \
        -chardev "socket,id=slot0,path=$socket" -device ivshmem-doorbell,chardev=slot0,vectors=32,ioeventfd=on,addr=0x5 \
        >>"$logs/backend-qemu.log" 2>&1 &
    backend_pid=$!
    pids+=("$backend_pid")
}
# the sum of a console's vfio-msix counts in the lines irqd-after.sh prints ("IVCUDA-INTERRUPTS  28:  5  IR-PCI-MSI ... vfio-msix[0](...)")
frontend_irqs() {
    tr -d '\r' <"$1" | awk '/^IVCUDA-INTERRUPTS .*vfio-msix/ { for (i = 3; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }'
}

echo "== guests" >&2
probe_args="--rounds $rounds --pause-ms 200"
[ "$restart" = 1 ] && probe_args="--rounds 0 --recovered-rounds 3 --pause-ms 200 --round-timeout-s 60"
gcc -O2 -Wall -Werror -o "$work/irq-socket-check" vm/irq-socket-check.c
# one guest for both modes: the doorbell front-end's command line (ivcuda.irqd) turns the interrupt scripts on
frontend_guest "$work/frontend" "$probe_args" --modules "vfio-pci vfio_iommu_type1" \
    --files "$root/guest/target/ivcuda-guest-irqd=/usr/sbin/ivcuda-guest-irqd" --files "$work/irq-socket-check=/usr/bin/irq-socket-check" \
    --before vm/irqd-before.sh --after vm/irqd-after.sh >"$logs/build-frontend.log" 2>&1 ||
    { echo "$0: building the front-end guest failed ($logs/build-frontend.log)" >&2; exit 2; }
# the back-end prints its vfio-msix interrupt count every 5 s (the front-end's rings reaching it)
cat >"$work/irq-count.sh" <<'SH'
( while :; do
    echo "IVCUDA-BACKEND-IRQS $(awk '/vfio-msix/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }' /proc/interrupts)" >/dev/console
    sleep 5
done ) &
SH
vm/build-backend-guest.sh --java-opts "$java_opts" --before "$work/irq-count.sh" \
    --modules "vfio-pci vfio_iommu_type1" --files "$root/guest/target/ivcuda-guest-irqd=/usr/sbin/ivcuda-guest-irqd" \
    --agent-args "--set backend=host-memory --set irqd.command=/usr/sbin/ivcuda-guest-irqd" \
    "$out/backend-guest" guest/target "$jar" "$agent" >"$logs/build-backend.log" 2>&1 ||
    { echo "$0: building the back-end guest failed ($logs/build-backend.log)" >&2; exit 2; }

echo "== host: the back-end's prepare (regions, the slot's relay) and started" >&2
hook be prepare begin <"$host/backend.xml" || { echo "$0: the hook refused the back-end: $(tail -3 "$logs/hook.log")" >&2; exit 1; }
hook be started begin <"$host/backend.xml"
check "the back-end's prepare started the slot's relay before its QEMU" test -S "$socket"

echo "== back-end VM (q35, virtual IOMMU, TCG)" >&2
t0=$SECONDS
backend_vm "$logs/backend-console.log"
# the front-end's prepare gives the slot to it (the agent's heartbeat: none yet, so no wait)
hook fe prepare begin <"$host/frontend.xml" || { echo "$0: the hook refused the front-end: $(tail -3 "$logs/hook.log")" >&2; exit 1; }
wait_for "$logs/backend-console.log" "CudaServer: ready" 900 || { failed=1; }
echo "back-end boot to its slot's server ready: $((SECONDS - t0)) s" >&2
irqs_ready=$(grep -a "IVCUDA-BACKEND-IRQS" "$logs/backend-console.log" | tail -1 | tr -d '\r' | awk '{print $2}')

echo "== front-end VM ($frontend_mode device on the slot)" >&2
t_frontend=$SECONDS
qemu-system-x86_64 -accel tcg -nodefaults -display none -no-reboot -m 256 -uuid "$F" -serial "file:$logs/frontend-console.log" \
    "${frontend_device[@]}" -kernel "$work/frontend/vmlinuz" -initrd "$work/frontend/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet$frontend_cmdline" >"$logs/frontend-qemu.log" 2>&1 &
fp=$!
pids+=("$fp")
if [ "$restart" = 1 ]; then
    # two good rounds, then the back-end goes away under the running front-end
    wait_for "$logs/frontend-console.log" "IVCUDA-PROBE round=2 ok" 900 || failed=1
    echo "== the back-end stops (its QEMU killed, the hook's release) while the front-end runs" >&2
    kill "$backend_pid" 2>/dev/null || true
    wait "$backend_pid" 2>/dev/null || true
    hook be release end <"$host/backend.xml"
    ok_before=$(grep -ac "IVCUDA-PROBE round=[0-9]* ok" "$logs/frontend-console.log" || true)
    t_gap=$SECONDS
    # the front-end sees the gap before the back-end comes back
    wait_for "$logs/frontend-console.log" "IVCUDA-PROBE round=[0-9]* error=" 300 || failed=1
    echo "== the back-end comes back (prepare, started, a new QEMU)" >&2
    hook be prepare begin <"$host/backend.xml" || { echo "$0: the hook refused the back-end's restart: $(tail -3 "$logs/hook.log")" >&2; failed=1; }
    hook be started begin <"$host/backend.xml"
    backend_vm "$logs/backend-console-2.log"
    wait_for "$logs/backend-console-2.log" "CudaServer: ready" 900 || failed=1
    echo "back-end restart: $((SECONDS - t_gap)) s from its stop to its new server ready" >&2
    timeout 900 tail --pid="$fp" -f /dev/null || true
    echo "front-end boot to its probe's end: $((SECONDS - t_frontend)) s, $((SECONDS - t_gap)) s of it from the back-end's stop" >&2
else
    timeout 900 tail --pid="$fp" -f /dev/null || true
    echo "front-end boot to its probe's end: $((SECONDS - t_frontend)) s" >&2
fi
kill "$fp" 2>/dev/null || true
sleep 6 # one more interrupt count from the back-end
cp "$host/log/"relay-*.log "$logs/" 2>/dev/null || true

echo "== checks" >&2
relay_log=$(ls "$host/log/"relay-*.log 2>/dev/null | head -1)
check "the relay admitted the back-end's QEMU as peer 0" grep -q "connected as peer 0 (the back-end's slot device)" "$relay_log"
backend_console=$logs/backend-console.log
[ "$restart" = 1 ] && backend_console=$logs/backend-console-2.log
irqs_end=$(grep -a "IVCUDA-BACKEND-IRQS" "$backend_console" | tail -1 | tr -d '\r' | awk '{print $2}')
[ "$restart" = 1 ] && irqs_ready=$(grep -a "IVCUDA-BACKEND-IRQS" "$backend_console" | head -1 | tr -d '\r' | awk '{print $2}')
echo "     vfio-msix interrupts in the back-end: ${irqs_ready:-?} when its server was ready, ${irqs_end:-?} after the front-end's rounds"
if [ "$frontend_mode" = doorbell ]; then
    check "the relay admitted the front-end's QEMU as peer 1" grep -q "connected as peer 1 (the front-end)" "$relay_log"
    # with --restart-backend: the restarted back-end's agent and server
    check "the agent started the slot device's interrupt daemon" grep -aq "interrupt daemon pid [0-9]* serves the MSI-X eventfds" "$backend_console"
    check "the server took the slot device's 32 MSI-X vectors" grep -aq "doorbell: the slot device's 32 MSI-X vectors come from" "$backend_console"
    check "the server was woken by the front-end's rings" grep -aq "doorbell: first ring on vector" "$backend_console"
    check "the back-end counted the front-end's rings as interrupts" test "${irqs_end:-0}" -gt "${irqs_ready:-0}"
    check "the server rang the front-end" grep -aq "doorbell: first interrupt to the front-end on vector" "$backend_console"
    fe_console=$logs/frontend-console.log
    check "the front-end's interrupt daemon owns its slot device (vfio-pci)" grep -aq "irq-socket-check: ok: self-rings of" "$fe_console"
    fe_before=$(grep -a "IVCUDA-INTERRUPTS-BEFORE-PROGRAMS" "$fe_console" | tail -1 | tr -d '\r' | awk '{print $2}')
    fe_after=$(frontend_irqs "$fe_console")
    fe_irqs=$((fe_after - ${fe_before:-0}))
    echo "     vfio-msix interrupts in the front-end: ${fe_before:-?} after the daemon's self-test rings, $fe_after after the probe"
    check "front-end received $fe_irqs interrupts from the back-end (N>0)" test -n "$fe_before" -a "$fe_irqs" -gt 0
    woken=$(tr -d '\r' <"$fe_console" | sed -n 's/.*interrupt waits: \([0-9]*\), woken by an interrupt: \([0-9]*\).*/\1 \2/p' |
        awk '{ w += $1; k += $2; n++ } END { print n + 0, w + 0, k + 0 }')
    read -r woken_procs woken_waits woken_count <<<"$woken"
    echo "     the front-end library's interrupt waits (IVCUDA_STATS, $woken_procs processes): $woken_waits, woken by an interrupt: $woken_count"
    check "the probe's answers came by interrupt (its library woken $woken_count times)" test "$woken_count" -gt 0
    check "the front-end's interrupt daemon stopped cleanly" grep -aq "IVCUDA-IRQD-EXIT rc=0" "$fe_console"
else
    check "a plain front-end's server polls (no interrupt daemon)" bash -c "! grep -aq 'interrupt daemon pid' '$backend_console'"
fi
ok_rounds=$(grep -ac "IVCUDA-PROBE round=[0-9]* ok" "$logs/frontend-console.log" || true)
all_rounds=$(grep -ac "IVCUDA-PROBE round=[0-9]* " "$logs/frontend-console.log" || true)
echo "     probe rounds ok: $ok_rounds of $all_rounds; $(grep -a "IVCUDA-BENCH roundtrip" "$logs/frontend-console.log" | tr -d '\r' | head -1)"
if [ "$restart" = 1 ]; then
    tr -d '\r' <"$logs/frontend-console.log" | grep -a "IVCUDA-PROBE round=[0-9]* " | grep -v " ok us=" |
        sed 's/.* \(error=[A-Z_]*\|hang\|crash\|mismatch\).*/\1/' | sort | uniq -c | sed 's/^/     during the gap: /'
    check "the probe's rounds were ok before the back-end stopped ($ok_before)" test "${ok_before:-0}" -ge 2
    check "the front-end saw the gap as CUDA errors" grep -aq "IVCUDA-PROBE round=[0-9]* error=" "$logs/frontend-console.log"
    check "every round in the gap failed cleanly (no hang, crash, mismatch or other error)" bash -c "! tr -d '\r' <'$logs/frontend-console.log' |
        grep -a 'IVCUDA-PROBE round=[0-9]* ' | grep -v ' ok us=' | grep -v -E ' error=CUDA_ERROR_(DEVICE_UNAVAILABLE|NOT_INITIALIZED|OUT_OF_MEMORY) ' | grep -q ."
    check "the probe recovered (3 ok rounds in a row after the gap)" grep -aq "IVCUDA-PROBE recovered after round=" "$logs/frontend-console.log"
    check "the relay admitted the restarted back-end's QEMU as peer 0 again" test "$(grep -c "connected as peer 0 (the back-end's slot device)" "$relay_log")" -eq 2
    if [ "$frontend_mode" = doorbell ]; then
        check "the front-end's QEMU kept peer 1 through the restart (admitted once)" test "$(grep -c "connected as peer 1 (the front-end)" "$relay_log")" -eq 1
    fi
else
    check "every probe round went through the back-end" test "$ok_rounds" -eq "$rounds"
fi

echo "== releases" >&2
kill "$backend_pid" 2>/dev/null || true
wait "$backend_pid" 2>/dev/null || true
hook fe release end <"$host/frontend.xml"
hook be release end <"$host/backend.xml"
sleep 1
# [r]: the pattern does not match this check's own command line
check "no relay runs after both releases" bash -c "! pgrep -f -- '[r]elay --socket $socket' >/dev/null"
check "its socket is gone" test ! -e "$socket"
[ "$failed" = 0 ] && echo "PASSED" || echo "FAILED (logs: $logs)"
exit "$failed"
