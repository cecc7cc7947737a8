# shellcheck shell=bash
# A back-end GPU domain stood in on this host (docs/backend-domains.md, "The GPU machine"): sourced
# by gpu/lib.sh when IVCUDA_VIA=backend. No VM can own the GPU where the validation runs (no
# passthrough, no libvirt), so the pieces a back-end domain and its front-end would run are run
# here, each the real one: the host's hook prepares the back-end's control region and slot region
# and assigns the slot to the front-end (fed the domains' XML as libvirt would feed it), the
# back-end's agent (ivcuda-backend-agent) finds them through a stand-in sysfs tree
# (backend-agent/src/main/sh/standin-sysfs) and starts the slot's cuda-server on this host's GPU,
# and the programs run against the slot's region as the front-end's guest would.
# What it does not show: the ivshmem BARs of two QEMUs, the guest kernels' PCI scan, the hop
# through a VM's memory mapping — CI's BackendDomainIT boots those under QEMU.
#
# Settings: as gpu/lib.sh, plus
#   STANDIN_BACKEND     the agent's server backend [cuda] (host-memory: a transport check without a GPU)

STANDIN_DIR=
STANDIN_AGENT_PID=
STANDIN_BACKEND_UUID=6976635a-0000-4000-8000-00000000be01
STANDIN_FRONTEND_UUID=6976635a-0000-4000-8000-00000000fe01

standin_hook() { # standin_hook NAME OP SUBOP < domain XML
    IVCUDA_CONFIG=$STANDIN_DIR/ivcuda.properties IVCUDA_HOME=$REPO_ROOT/libvirt-hook/target \
        sh "$REPO_ROOT/libvirt-hook/src/main/sh/50-ivcuda" "$1" "$2" "$3" - >>"$OUT/logs/standin-hook.log" 2>&1
}

standin_domain() { # standin_domain NAME UUID ELEMENT-ATTRIBUTES SHMEM-NAME...
    local name=$1 uuid=$2 attributes=$3 shmem size
    shift 3
    printf "<domain type='kvm'>\n  <name>%s</name>\n  <uuid>%s</uuid>\n" "$name" "$uuid"
    printf '  <metadata>\n    <ivcuda:gpu xmlns:ivcuda="https://ivcuda.dev/xmlns/domain/1" %s/>\n  </metadata>\n' "$attributes"
    printf '  <devices>\n'
    for shmem in "$@"; do
        size=$((REGION_SIZE >> 20))
        [[ "$shmem" == *-control ]] && size=1
        printf "    <shmem name='%s'>\n      <model type='ivshmem-plain'/>\n      <size unit='M'>%s</size>\n    </shmem>\n" \
            "$shmem" "$size"
    done
    printf '  </devices>\n</domain>\n'
}

# standin_start MAX_S: the back-end prepared and started, its agent running, the slot assigned to the
# front-end; REGION_PATH becomes the slot's region, SERVER_PID the agent (its child serves the slot).
standin_start() {
    local max_s=$1 shm b=$STANDIN_BACKEND_UUID f=$STANDIN_FRONTEND_UUID
    shm=$(dirname "$REGION_PATH")
    STANDIN_DIR=$BUILD_DIR/backend-standin
    rm -rf "$STANDIN_DIR"
    mkdir -p "$STANDIN_DIR"/{run,state,log,agent-run}
    {
        echo "runtime.dir=$STANDIN_DIR/run"
        echo "state.dir=$STANDIN_DIR/state"
        echo "log.dir=$STANDIN_DIR/log"
        echo "shm.dir=$shm"
        echo "server.user=$(id -un)"
        echo "qemu.group=$(id -gn)"
    } >"$STANDIN_DIR/ivcuda.properties"
    # what the provisioner writes when it gives the front-end slot 0 (operations.md, "Back-end GPU domains")
    echo "$b 0 $f standin-frontend" >"$STANDIN_DIR/state/backend-slots"
    standin_domain standin-backend "$b" 'role="backend" slots="1" size="'$((REGION_SIZE >> 20))'M"' \
        "ivcuda-$b-control" "ivcuda-$b-slot0" >"$STANDIN_DIR/backend.xml"
    standin_domain standin-frontend "$f" 'backend="standin-backend"' "ivcuda-$b-slot0" >"$STANDIN_DIR/frontend.xml"
    rm -f "$shm/ivcuda-$b-control" "$shm/ivcuda-$b-slot0"
    if ! standin_hook standin-backend prepare begin <"$STANDIN_DIR/backend.xml" \
        || ! standin_hook standin-backend started begin <"$STANDIN_DIR/backend.xml"; then
        log "back-end stand-in: the hook refused the back-end (logs/standin-hook.log): $(tail -n 2 "$OUT/logs/standin-hook.log")"
        return 1
    fi
    sh "$REPO_ROOT/backend-agent/src/main/sh/standin-sysfs" "$b" "$STANDIN_DIR/sysfs" "$shm" >>"$OUT/logs/standin-hook.log" 2>&1 \
        || { log "back-end stand-in: standin-sysfs failed (logs/standin-hook.log)"; return 1; }
    local oracle=$BUILD_DIR/host-tools/ivcuda-integrity-oracle
    make -s -C "$REPO_ROOT/host-tools" BUILD="$BUILD_DIR/host-tools" "$oracle" >>"$OUT/logs/build-host-tools.log" 2>&1
    : >"$STANDIN_DIR/server.properties"
    [ -x "$oracle" ] && echo "integrity.oracle=$oracle" >>"$STANDIN_DIR/server.properties"
    timeout -s TERM -k 10 "$max_s" java -jar "$REPO_ROOT/backend-agent/target/backend-agent.jar" \
        --set "sysfs.root=$STANDIN_DIR/sysfs" --set "backend=${STANDIN_BACKEND:-cuda}" \
        --set "run.dir=$STANDIN_DIR/agent-run" --set "server.config=$STANDIN_DIR/server.properties" \
        --set "server.command=java -jar $SERVER_JAR" >>"$OUT/logs/server.log" 2>&1 &
    STANDIN_AGENT_PID=$!
    SERVER_PID=$STANDIN_AGENT_PID
    # the front-end's prepare waits (10 s at most) for the agent's first heartbeat or its idle slot
    if ! standin_hook standin-frontend prepare begin <"$STANDIN_DIR/frontend.xml"; then
        log "back-end stand-in: the hook refused the front-end (logs/standin-hook.log): $(tail -n 2 "$OUT/logs/standin-hook.log")"
        return 1
    fi
    REGION_PATH=$shm/ivcuda-$b-slot0
    log "back-end stand-in: agent pid $STANDIN_AGENT_PID, slot 0 assigned, waiting for READY in $REGION_PATH"
    local t0 rc
    t0=$(now_s)
    "$GUEST_LIB_DIR/ivcuda-region-wait" --pid "$STANDIN_AGENT_PID" "$REGION_PATH" 90 >"$OUT/logs/region-wait.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] && { log "back-end stand-in: slot's server READY after ~$(elapsed_s "$t0" "$(now_s)") s"; return 0; }
    log "back-end stand-in: no READY server on the slot (ivcuda-region-wait exit $rc): $(cat "$OUT/logs/region-wait.log")"
    return 1
}

standin_slot_servers() {
    local agent
    for agent in $(pgrep -P "$STANDIN_AGENT_PID"); do pgrep -P "$agent"; done
}

# standin_stop: the front-end released (the agent stops the slot's server), the back-end released,
# the agent stopped, the regions removed.
standin_stop() {
    [ -n "$STANDIN_DIR" ] || return 0
    local b=$STANDIN_BACKEND_UUID shm
    shm=$(dirname "$REGION_PATH")
    standin_hook standin-frontend release end <"$STANDIN_DIR/frontend.xml" \
        || log "back-end stand-in: the front-end's release failed (logs/standin-hook.log)"
    if [ -n "$STANDIN_AGENT_PID" ]; then
        # the agent stops the freed slot's server within its poll and the server's stop timeout; the
        # server is the agent's child, the agent `timeout`'s
        for _ in $(seq 1 100); do
            standin_slot_servers | grep -q . || break
            sleep 0.1
        done
        standin_slot_servers | grep -q . && log "back-end stand-in: the slot's server still ran 10 s after the release"
        kill -TERM "$STANDIN_AGENT_PID" 2>/dev/null
        wait "$STANDIN_AGENT_PID" 2>/dev/null
        log "back-end stand-in: agent stopped, exit status $?"
    fi
    standin_hook standin-backend release end <"$STANDIN_DIR/backend.xml" \
        || log "back-end stand-in: the back-end's release failed (logs/standin-hook.log)"
    rm -f "$shm/ivcuda-$b-control" "$shm/ivcuda-$b-slot0"
    STANDIN_DIR= STANDIN_AGENT_PID= SERVER_PID=
}
