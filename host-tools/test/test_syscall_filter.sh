#!/bin/sh
# ivcuda-syscall-filter: the allow-list is the server unit's (regenerated from the unit and compared,
# where systemd-analyze is), a process under it reports seccomp mode 2, a call the unit denies
# (ptrace, of @debug) fails with EPERM, personality(ADDR_NO_RANDOMIZE) still works (the integrity
# oracle needs it for its children), and the oracle's own tests pass under it. Skipped (said in one
# line) where libseccomp.so.2 is not installed.
set -u
BUILD=${BUILD:-target}
failed=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; failed=1; }
if command -v systemd-analyze >/dev/null; then
    if sh syscall-allow.sh "$UNIT" | diff -q - src/syscall_allow.inc >/dev/null; then
        ok "src/syscall_allow.inc is the unit's SystemCallFilter"
    else
        fail "src/syscall_allow.inc differs from the unit's SystemCallFilter: run sh syscall-allow.sh $UNIT > src/syscall_allow.inc"
    fi
fi
# what the build's own sandbox (a container's filter, a tracer) already refuses: said, not checked
echo "     unfiltered: $("$BUILD/tests/syscall_probe")"
if ! "$BUILD/ivcuda-syscall-filter" --require -- true 2>/dev/null; then
    echo "test_syscall_filter: skipped: $("$BUILD/ivcuda-syscall-filter" --require -- true 2>&1)"
    [ $failed = 0 ]; exit
fi
filtered=$("$BUILD/ivcuda-syscall-filter" --require -- "$BUILD/tests/syscall_probe")
# 1: EPERM
[ "$filtered" = "seccomp=2 ptrace=1 personality=0" ] && ok "filtered: $filtered" || fail "filtered: $filtered"
if "$BUILD/ivcuda-syscall-filter" --require -- "$BUILD/tests/test_oracle" "$ORACLE" "$MOCK" \
        >"$BUILD/tests/oracle-filtered.log" 2>&1; then
    ok "the integrity oracle's tests pass under the filter"
else
    status=$?
    [ $status = 77 ] && ok "the integrity oracle's tests cannot run here (77)" || { cat "$BUILD/tests/oracle-filtered.log"; fail "the integrity oracle's tests under the filter"; }
fi
missing=$("$BUILD/ivcuda-syscall-filter" -- /nonexistent 2>&1; echo "status $?")
case $missing in *"cannot run /nonexistent"*"status 127") ok "a missing program: 127" ;; *) fail "a missing program: $missing" ;; esac
[ $failed = 0 ] && echo "test_syscall_filter: PASSED" || echo "test_syscall_filter: FAILED"
[ $failed = 0 ]
