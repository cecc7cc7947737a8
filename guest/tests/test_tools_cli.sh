#!/bin/sh
# The guest's packaged commands follow the conventions of every ivcuda command (docs/operations.md,
# issue 14): --help and -h on stdout, exit 0, first line "Usage: NAME " with the installed name
# (help2man builds their man pages from it); --version and -V exactly "NAME (ivcuda) VERSION", the
# package's version when the build was given one; a wrong argument exits 64 with the usage on stderr
# and nothing on stdout. packaging/test-installed.sh checks the installed copies the same way.
# usage: tests/test_tools_cli.sh BUILD [VERSION]   (VERSION as the packages spell it: 0.1.0~SNAPSHOT)
set -u
BUILD=$1
VERSION=${2:-}
passed=0
failed=0
fail() {
    failed=$((failed + 1))
    echo "FAILED: $*"
}
for name in ivcuda-guest-check ivcuda-guest-irqd ivcuda-smi; do
    tool=$BUILD/$name
    for option in --help -h; do
        out=$(LD_LIBRARY_PATH=$BUILD "$tool" "$option" 2>/dev/null)
        rc=$?
        first=$(printf '%s\n' "$out" | head -n 1)
        if [ "$rc" = 0 ] && case "$first" in "Usage: $name "*) true ;; *) false ;; esac; then
            passed=$((passed + 1))
        else
            fail "$name $option: rc $rc, first line '$first' (expected 0 and 'Usage: $name ...')"
        fi
    done
    for option in --version -V; do
        out=$(LD_LIBRARY_PATH=$BUILD "$tool" "$option" 2>/dev/null)
        rc=$?
        if [ -n "$VERSION" ]; then expected="$name (ivcuda) $VERSION"; else expected="$name (ivcuda) *"; fi
        # shellcheck disable=SC2254 # the expected text is a pattern when no version was given
        if [ "$rc" = 0 ] && case "$out" in $expected) true ;; *) false ;; esac && [ "$out" != "$name (ivcuda) " ]; then
            passed=$((passed + 1))
        else
            fail "$name $option: rc $rc, '$out' (expected 0 and '$expected')"
        fi
    done
    out=$(LD_LIBRARY_PATH=$BUILD "$tool" --no-such-option 2>"$BUILD/tools-cli.err")
    rc=$?
    if [ "$rc" = 64 ] && [ -z "$out" ] && grep -q "^Usage: $name " "$BUILD/tools-cli.err"; then
        passed=$((passed + 1))
    else
        fail "$name --no-such-option: rc $rc, stdout '$out', stderr '$(cat "$BUILD/tools-cli.err")' (expected 64, the usage on stderr)"
    fi
done
rm -f "$BUILD/tools-cli.err"
echo "tools' command lines: $passed passed, $failed failed"
[ "$failed" = 0 ]
