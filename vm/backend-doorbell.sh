#!/usr/bin/env bash
# Doorbell mode through a back-end domain, end to end under QEMU TCG without libvirt
# (docs/backend-domains.md, "Doorbell mode through a back-end"): the host's hook (fed the domains'
# XML as libvirt feeds it) prepares a doorbell back-end and starts its slot's ivshmem relay; the
# back-end VM (q35 with a virtual IOMMU, the agent, ivcuda-guest-irqd, the cuda-server on its
# host-memory backend) and a doorbell front-end VM (vm/frontend-probe.c) both connect to the relay
# as QEMU peers; the front-end's probe runs its rounds through the back-end. Passes when:
#   - the relay admitted the back-end's QEMU as peer 0 and the front-end's as peer 1;
#   - the agent started the interrupt daemon and the server took the slot device's MSI-X vectors;
#   - the server was woken by the front-end's rings ("doorbell: first ring on vector N") and the
#     back-end counted vfio-msix interrupts (/proc/interrupts) after its server became ready;
#   - every probe round was ok;
#   - after both releases no relay runs and its socket is gone.
#
# usage: vm/backend-doorbell.sh [--out DIR] [--rounds N]
#   run from the repository root after `mvn -B -q package -DskipTests` (the hook's, the server's
#   and the agent's jars with lib/, the guest library and ivcuda-guest-irqd); QEMU, gcc, and what
#   vm/build-guest.sh needs. DIR (default ./out/backend-doorbell) gets the consoles and logs.
# Exit status: 0 passed, 1 a check failed, 2 could not run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$root/out/backend-doorbell
rounds=6
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        *) echo "usage: $0 [--out DIR] [--rounds N]" >&2; exit 2 ;;
    esac
done
jar=$root/cuda-server/target/cuda-server.jar
agent=$root/backend-agent/target/backend-agent.jar
for f in "$jar" "$agent" "$root/libvirt-hook/target/libvirt-hook.jar" guest/target/libcuda.so.1 guest/target/ivcuda-guest-irqd; do
    [ -f "$f" ] || { echo "$0: no $f: build first (mvn -B -q package -DskipTests)" >&2; exit 2; }
done
mkdir -p "$out/logs"
logs=$(cd "$out/logs" && pwd)
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

java_opts="-Xmx128m -Xss512k -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1"
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
domain fe "$F" "backend=\"be\" mode=\"doorbell\"" "$(doorbell_shmem)" >"$host/frontend.xml"
hook() { # name op subop < XML
    IVCUDA_CONFIG=$host/ivcuda.properties IVCUDA_HOME=$root/libvirt-hook/target \
        sh "$root/libvirt-hook/src/main/sh/50-ivcuda" "$1" "$2" "$3" - >>"$logs/hook.log" 2>&1
}
wait_for() { # file, pattern, seconds
    local i
    for ((i = 0; i < $3; i++)); do
        if grep -aq "$2" "$1" 2>/dev/null; then return 0; fi
        sleep 1
    done
    echo "$0: no '$2' in $1 after $3 s" >&2
    return 1
}

echo "== guests" >&2
gcc -O2 -Wall -Wextra -Werror -std=c11 -Iguest/include -o "$work/frontend-probe" vm/frontend-probe.c -Lguest/target -lcuda
vm/build-guest.sh --args "--rounds $rounds --pause-ms 200" "$work/frontend" guest/target "$work/frontend-probe" >"$logs/build-frontend.log" 2>&1 ||
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
# the IOMMU first: QEMU wants it before the devices it translates for; interrupt remapping, or
# vfio_iommu_type1 refuses MSI-X (VmIT's doorbell domain has the same)
qemu-system-x86_64 -accel tcg -machine q35 -nodefaults -display none -no-reboot -m 1024 -uuid "$B" \
    -device intel-iommu,intremap=on -serial "file:$logs/backend-console.log" \
    -kernel "$out/backend-guest/vmlinuz" -initrd "$out/backend-guest/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet intel_iommu=on no_timer_check" \
    -object "memory-backend-file,id=control,mem-path=$shm/ivcuda-$B-control,size=1M,share=on" \
    -device ivshmem-plain,memdev=control,addr=0x4 \
    -chardev "socket,id=slot0,path=$socket" -device ivshmem-doorbell,chardev=slot0,vectors=32,ioeventfd=on,addr=0x5 \
    >"$logs/backend-qemu.log" 2>&1 &
pids+=("$!")
# the front-end's prepare gives the slot to it (the agent's heartbeat: none yet, so no wait)
hook fe prepare begin <"$host/frontend.xml" || { echo "$0: the hook refused the front-end: $(tail -3 "$logs/hook.log")" >&2; exit 1; }
wait_for "$logs/backend-console.log" "CudaServer: ready" 900 || { failed=1; }
echo "back-end boot to its slot's server ready: $((SECONDS - t0)) s" >&2
irqs_ready=$(grep -a "IVCUDA-BACKEND-IRQS" "$logs/backend-console.log" | tail -1 | tr -d '\r' | awk '{print $2}')

echo "== front-end VM (doorbell device on the same relay)" >&2
qemu-system-x86_64 -accel tcg -nodefaults -display none -no-reboot -m 256 -uuid "$F" -serial "file:$logs/frontend-console.log" \
    -kernel "$work/frontend/vmlinuz" -initrd "$work/frontend/initramfs.cpio.gz" -append "console=ttyS0 panic=-1 quiet" \
    -chardev "socket,id=slot0,path=$socket" -device ivshmem-doorbell,chardev=slot0,vectors=32,ioeventfd=on \
    >"$logs/frontend-qemu.log" 2>&1 &
fp=$!
pids+=("$fp")
timeout 900 tail --pid="$fp" -f /dev/null || true
sleep 6 # one more interrupt count from the back-end
cp "$host/log/"relay-*.log "$logs/" 2>/dev/null || true

echo "== checks" >&2
relay_log=$(ls "$host/log/"relay-*.log 2>/dev/null | head -1)
check "the relay admitted the back-end's QEMU as peer 0" grep -q "connected as peer 0 (the back-end's slot device)" "$relay_log"
check "the relay admitted the front-end's QEMU as peer 1" grep -q "connected as peer 1 (the front-end)" "$relay_log"
check "the agent started the slot device's interrupt daemon" grep -aq "interrupt daemon pid [0-9]* serves the MSI-X eventfds" "$logs/backend-console.log"
check "the server took the slot device's 32 MSI-X vectors" grep -aq "doorbell: the slot device's 32 MSI-X vectors come from" "$logs/backend-console.log"
check "the server was woken by the front-end's rings" grep -aq "doorbell: first ring on vector" "$logs/backend-console.log"
irqs_end=$(grep -a "IVCUDA-BACKEND-IRQS" "$logs/backend-console.log" | tail -1 | tr -d '\r' | awk '{print $2}')
echo "     vfio-msix interrupts in the back-end: ${irqs_ready:-?} when its server was ready, ${irqs_end:-?} after the front-end's rounds"
check "the back-end counted the front-end's rings as interrupts" test "${irqs_end:-0}" -gt "${irqs_ready:-0}"
ok_rounds=$(grep -ac "IVCUDA-PROBE round=[0-9]* ok" "$logs/frontend-console.log" || true)
echo "     probe rounds ok: $ok_rounds of $rounds; $(grep -a "IVCUDA-BENCH roundtrip" "$logs/frontend-console.log" | tr -d '\r' | head -1)"
check "every probe round went through the back-end" test "$ok_rounds" -eq "$rounds"

echo "== releases" >&2
kill "${pids[0]}" 2>/dev/null || true
wait "${pids[0]}" 2>/dev/null || true
hook fe release end <"$host/frontend.xml"
hook be release end <"$host/backend.xml"
sleep 1
# [r]: the pattern does not match this check's own command line
check "no relay runs after both releases" bash -c "! pgrep -f -- '[r]elay --socket $socket' >/dev/null"
check "its socket is gone" test ! -e "$socket"
[ "$failed" = 0 ] && echo "PASSED" || echo "FAILED (logs: $logs)"
exit "$failed"
