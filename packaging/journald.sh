#!/bin/bash
# A journald of the test's own, on a host where systemd is not PID 1 (CI's Debian 12 container):
# packaging/test-installed.sh sources this file and checks that the hook's and the provisioner's records
# reach the journal through their Log4j appender (templates/log4j2-*.xml), as on a systemd host.
#   start_test_journald       starts /lib/systemd/systemd-journald (volatile storage: /run/log/journal)
#                             unless journald already runs here, which is then used and left alone
#   journal_lines IDENT [journalctl arguments…]
#                             this run's records of IDENT (SYSLOG_IDENTIFIER), messages only
#   stop_test_journald        stops the journald it started and removes what it made
# Run alone (root, after mvn package): packaging/journald.sh self-test — a refusal of the built hook
# (libvirt-hook/target) reaches the journal with its priority and its IVCUDA_DOMAIN field, and so does the
# built provisioner's record of an invalid element (libvirt's test driver, no libvirtd).

journald_bin=/lib/systemd/systemd-journald
journald_socket=/run/systemd/journal/socket
journald_conf_dir=/run/systemd/journald.conf.d
journald_pid=
journald_made_run_systemd=
journald_since=
journalctl_args=()

start_test_journald() {
    journald_since=$(date +%s)
    if [ -S "$journald_socket" ]; then
        echo "note: journald already runs here: the journal checks use it"
        return 0
    fi
    [ -x "$journald_bin" ] || { echo "FAIL: no $journald_bin (Debian's package systemd)" >&2; return 1; }
    [ -d /run/systemd ] || journald_made_run_systemd=1
    mkdir -p "$journald_conf_dir"
    # volatile: the records go to /run/log/journal, removed afterwards (Debian 12 keeps /var/log/journal);
    # no kernel messages, nothing forwarded
    printf '[Journal]\nStorage=volatile\nReadKMsg=no\nForwardToSyslog=no\nForwardToWall=no\nForwardToConsole=no\n' \
        > "$journald_conf_dir/ivcuda-test.conf"
    "$journald_bin" >/dev/null 2>&1 &
    journald_pid=$!
    local i
    for i in $(seq 1 50); do
        [ -S "$journald_socket" ] && break
        kill -0 "$journald_pid" 2>/dev/null || { echo "FAIL: $journald_bin exited at once" >&2; journald_pid=; return 1; }
        sleep 0.1
    done
    [ -S "$journald_socket" ] || { echo "FAIL: $journald_bin made no $journald_socket in 5 s" >&2; return 1; }
    journalctl_args=(--directory=/run/log/journal)
    echo "journald (pid $journald_pid) listens on $journald_socket"
}

# journal_lines IDENT [more journalctl arguments: -p err, IVCUDA_DOMAIN=NAME]
journal_lines() {
    local ident=$1
    shift
    journalctl "${journalctl_args[@]}" --no-pager -q -o cat --since "@$journald_since" -t "$ident" "$@" 2>/dev/null
}

stop_test_journald() {
    [ -n "$journald_pid" ] || return 0
    kill "$journald_pid" 2>/dev/null || true
    wait "$journald_pid" 2>/dev/null || true
    journald_pid=
    rm -rf /run/systemd/journal /run/log/journal "$journald_conf_dir/ivcuda-test.conf"
    rmdir "$journald_conf_dir" 2>/dev/null || true
    if [ -n "$journald_made_run_systemd" ]; then
        rmdir /run/systemd 2>/dev/null || true
    fi
    journalctl_args=()
}

# The built hook refuses a tagged domain without its device; the refusal must be in the journal at
# priority err, with the domain as a field.
journald_self_test() {
    local repo status
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    [ -r "$repo/libvirt-hook/target/libvirt-hook.jar" ] || { echo "FAIL: build first: mvn -pl libvirt-hook -am package" >&2; return 1; }
    work=$(mktemp -d /tmp/ivcuda-journald.XXXXXX)   # global: the EXIT trap runs after this function returned
    trap 'stop_test_journald; rm -rf "$work"' EXIT
    printf 'log.dir=%s\nruntime.dir=%s\n' "$work/log" "$work/run" > "$work/ivcuda.properties"
    start_test_journald || return 1
    set +e
    IVCUDA_CONFIG="$work/ivcuda.properties" java -jar "$repo/libvirt-hook/target/libvirt-hook.jar" \
        ivcuda-journald-test prepare begin - \
        < "$repo/libvirt-hook/src/test/resources/domains/tagged-without-shmem.xml" 2> "$work/hook.err"
    status=$?
    set -e
    [ "$status" = 1 ] || { echo "FAIL: the hook exited $status, not 1 (a refusal): $(cat "$work/hook.err")" >&2; return 1; }
    check_journal_line ivcuda-hook "has no ivcuda device" -p err IVCUDA_DOMAIN=ivcuda-journald-test
    [ ! -e "$work/log/hook.log" ] || { echo "FAIL: the hook wrote its file too: $(cat "$work/log/hook.log")" >&2; return 1; }
    # the provisioner's one-shot record of an invalid element, against libvirt's test driver (no libvirtd)
    if [ -r "$repo/ivshmem-provisioner/target/ivshmem-provisioner.jar" ]; then
        cat > "$work/node.xml" <<'NODE'
<node>
  <domain type='test'>
    <name>ivcuda-journald-huge</name>
    <uuid>6695eb01-f6a4-8304-79aa-97f2502e193f</uuid>
    <metadata><ivcuda:gpu xmlns:ivcuda="https://ivcuda.dev/xmlns/domain/1" size="1T"/></metadata>
    <memory>65536</memory>
    <os><type>hvm</type></os>
  </domain>
</node>
NODE
        IVCUDA_CONFIG="$work/ivcuda.properties" java -jar "$repo/ivshmem-provisioner/target/ivshmem-provisioner.jar" \
            --connect "test://$work/node.xml" provision ivcuda-journald-huge >/dev/null 2>&1 || true
        check_journal_line ivshmem-provisioner "ivcuda-journald-huge.*1T" -p err
    fi
    echo "journald self-test: ok"
}

# check_journal_line IDENT REGEX [journalctl arguments]: waits up to 10 s for a record of IDENT matching REGEX (grep -E)
check_journal_line() {
    local ident=$1 text=$2 i
    shift 2
    for i in $(seq 1 100); do
        if journal_lines "$ident" "$@" | grep -E -- "$text" >/dev/null; then  # not -q: journalctl must not die of SIGPIPE (pipefail)
            echo "journal ($ident $*): $(journal_lines "$ident" "$@" | grep -E -m1 -- "$text")"
            return 0
        fi
        sleep 0.1
    done
    echo "FAIL: no record of $ident $* matching '$text' in the journal; its records of $ident:" >&2
    journal_lines "$ident" >&2 || true
    return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    case "${1:-}" in
        self-test) journald_self_test ;;
        *) echo "usage: $0 self-test   (sourced by packaging/test-installed.sh otherwise)" >&2; exit 2 ;;
    esac
fi
