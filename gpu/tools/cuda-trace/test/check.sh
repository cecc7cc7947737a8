#!/usr/bin/env bash
# cuda-trace against a fake driver: builds fake_driver.c (SONAME libcuda.so.1, like the
# real one) and trace_test.c, runs the test with the shim first on LD_LIBRARY_PATH in four
# modes (default; no return tracking; tables not copied; a driver whose references to its
# own exported names bind to the shim's), and checks that the trace says what happened.
# usage: check.sh <dir holding the built shim>
set -euo pipefail
shim=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$shim/test
rm -rf "$work"
mkdir -p "$work/fake" "$work/fake-interposable"
cc=${CC:-gcc}
# -Bsymbolic: the driver's own references to its functions stay inside it; without it they
# bind to the first libcuda.so.1 in the global scope, the shim.
$cc -O2 -g -std=c11 -Wall -Wextra -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic \
    "$here/fake_driver.c" -o "$work/fake/libcuda.so.1"
$cc -O2 -g -std=c11 -Wall -Wextra -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 \
    "$here/fake_driver.c" -o "$work/fake-interposable/libcuda.so.1"
$cc -O2 -g -std=c11 -Wall -Wextra "$here/trace_test.c" -o "$work/trace_test" -L"$shim" -lcuda -ldl -lpthread

failures=0
expect() { # expect <description> <command...>: the command must succeed
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then
        echo "ok   $what"
    else
        echo "FAIL $what"
        failures=$((failures + 1))
    fi
}

run_mode() { # run_mode <name> <fake> [VAR=value...]: the test in one mode; its trace in $work/<name>
    local name=$1 fake=$2
    shift 2
    mkdir -p "$work/$name"
    echo "== $name ${*:-}"
    if ! env "$@" LD_LIBRARY_PATH="$shim" CUDA_TRACE_REAL="$work/$fake/libcuda.so.1" \
        CUDA_TRACE_OUT="$work/$name/trace.%p.log" CUDA_TRACE_SLOT_CALLS=1000 \
        "$work/trace_test" "$shim" >"$work/$name/stdout" 2>"$work/$name/stderr"; then
        echo "FAIL test program in mode $name:"
        cat "$work/$name/stdout" "$work/$name/stderr"
        failures=$((failures + 1))
        return
    fi
    echo "ok   test program ($(grep -c '^ok' "$work/$name/stdout") checks)"
}

run_mode default fake
child_pid=$(awk '/^child / { print $2 }' "$work/default/stdout")
t=
for f in "$work"/default/trace.*.log; do
    [ "$f" = "$work/default/trace.$child_pid.log" ] || t=$f
done
expect "header names the fake driver and its version" grep -q "^H real=$work/fake/libcuda.so.1 driver_version=13000 rc=0" "$t"
expect "names the driver lacks are listed" grep -q '^H missing=cuArrayCreate$' "$t"
expect "direct call with stack arguments logged with its result" grep -qE '^CR seq=[0-9]+ tid=[0-9]+ fn=cuLaunchKernel rc=[0-9]+' "$t"
expect "direct call's arguments logged raw" grep -qE '^CE .* fn=cuLaunchKernel caller=trace_test\+0x[0-9a-f]+ a=abcdef,1,2,3,4,5' "$t"
expect "cuDriverGetVersion's output dumped after the call (13000 = c8320000)" \
    grep -qE "^CR .*fn=cuDriverGetVersion rc=0 p0'=c8320000" "$t"
expect "GPA: cuMemAlloc@3020 resolves to cuMemAlloc_v2" grep -qE '^GPA .* sym=cuMemAlloc ver=3020 flags=0 rc=0 status=0 real=libcuda.so.1\+0x[0-9a-f]+\(cuMemAlloc_v2\) given=cuMemAlloc_v2$' "$t"
expect "GPA: cuMemAlloc@2000 resolves to cuMemAlloc" grep -qE '^GPA .* sym=cuMemAlloc ver=2000 .* given=cuMemAlloc$' "$t"
expect "GPA: flags=2 gives the _ptds variant" grep -qE '^GPA .* sym=cuMemcpy ver=4000 flags=2 .* given=cuMemcpy_ptds$' "$t"
expect "GPA: an unexported function gets a pool stub" grep -qE '^GPA .* sym=cuFakeHidden ver=12000 .* given=pool:1024$' "$t"
expect "GPA: the empty probe is logged" grep -qE '^GPA .* sym= ver=0 flags=0 rc=500 status=null real=null$' "$t"
expect "GPA: calls through a pool stub are counted by symbol@version" grep -q '^S fn=cuFakeHidden@12000 kind=proc calls=1$' "$t"
uuid_sized=112233445566778899aabbccddeeff01
uuid_nosize=c693336e0102030405060708090a0b0c
expect "EXP: the sized table, its size word 56 and the copy" grep -qE "^EXP .* uuid=$uuid_sized rc=0 table=[0-9a-f]+ first=56 copy=[0-9a-f]+" "$t"
expect "EXP: an unknown UUID fails as the driver says" grep -qE '^EXP .* uuid=dead0000000000000000000000000000 rc=500 table=0 first=0 copy=0' "$t"
expect "XT: the sized table has 7 words" grep -qE "^XT table=$uuid_sized real=[0-9a-f]+ copy=[0-9a-f]+ size=56 words=7" "$t"
expect "XW: word 0 is the size" grep -q "^XW table=$uuid_sized word=0 value=38 kind=size" "$t"
expect "XW: word 1 is code in the driver" grep -qE "^XW table=$uuid_sized word=1 value=[0-9a-f]+ kind=code stub=[0-9a-f]+ at=libcuda.so.1\+0x" "$t"
expect "XW: word 2 is NULL" grep -q "^XW table=$uuid_sized word=2 value=0 kind=null" "$t"
expect "XW: word 3 is data, dumped" grep -qE "^XW table=$uuid_sized word=3 value=[0-9a-f]+ kind=data at=libcuda.so.1\+0x[0-9a-f]+ bytes=66616b6520647269766572" "$t"
expect "XT: the table without a size word: 16 words copied" grep -qE "^XT table=$uuid_nosize .* size=none:[0-9]+ words=16" "$t"
expect "XW: its first three words are code" test "$(grep -cE "^XW table=$uuid_nosize word=[012] .*kind=code" "$t")" = 3
expect "XE: slot 1 called with 13001 (32c9) and an output pointer" grep -qE "^XE .* table=$uuid_sized slot=1 caller=trace_test\+0x[0-9a-f]+ a=32c9,[0-9a-f]+," "$t"
expect "XR: slot 1's 16 output bytes after the call" grep -qE "^XR .* table=$uuid_sized slot=1 ret=0 rdx=[0-9a-f]+ p1'=c9925b24edb67f4811daa36c35fec790" "$t"
expect "XE: stack arguments of the 8-argument slot" grep -qE "^XE .* table=$uuid_sized slot=4 .* a=1,2,3,4,5,6 s=7,8" "$t"
expect "XR: 16-byte result in rax:rdx" grep -qE "^XR .* table=$uuid_sized slot=4 ret=24 rdx=7" "$t"
expect "XR: what a slot wrote through a stack argument (42 = 2a)" grep -qE "^XR .* table=$uuid_sized slot=4 .* p6'=2a00000000000000" "$t"
expect "XE: a code-pointer argument is named" grep -qE "^XE .* table=$uuid_nosize slot=2 .* c0=trace_test\+0x[0-9a-f]+ p1=05000000" "$t"
expect "CE: the call back into the driver from inside a slot" grep -qE "^CE .* fn=cuDeviceGet caller=trace_test" "$t"
expect "XR: after a longjmp out of a nested call, the outer return unwinds its frame" \
    grep -qE "^XR .* table=$uuid_nosize slot=2 ret=3eb rdx=[0-9a-f]+ unwound=1" "$t"
expect "XE: recursion past the return stack goes untracked" grep -qE "^XE .* slot=2 .* ret=untracked" "$t"
expect "S: every call counted across threads" grep -q '^S fn=cuDeviceGet kind=export calls=80001$' "$t"
expect "S: slot counts" grep -q "^S table=$uuid_sized slot=1 kind=slot calls=2$" "$t"
expect "S: slot 4 twice" grep -q "^S table=$uuid_sized slot=4 kind=slot calls=2$" "$t"
expect "ST: tables summary" grep -q "^ST table=$uuid_sized words=7 size=word0 requests=2$" "$t"
expect "XC: the driver changed a word of its table" grep -q "^XC table=$uuid_nosize word=3 in=driver was=0 now=2a$" "$t"
expect "XC: the program wrote into its copy" grep -qE "^XC table=$uuid_sized word=2 in=copy was=0 now=1234$" "$t"
expect "E: end record" grep -qE '^E seq=[0-9]+ logged_calls=[0-9]+ pool_used=[0-9]+$' "$t"
expect "child trace in its own file, with its parent" grep -qE "^H format=cuda-trace-1 pid=$child_pid parent=[0-9]+ " "$work/default/trace.$child_pid.log"
expect "child's own lookups in its file" grep -qE '^GPA .* sym=cuInit ver=2000 .* given=cuInit$' "$work/default/trace.$child_pid.log"
# the two calls left by longjmp never return
expect "every CE/XE has its CR/XR but the untracked ones and the two left by longjmp" \
    test "$(grep -cE '^(CE|XE) ' "$t")" = "$(($(grep -cE '^(CR|XR) ' "$t") + $(grep -c 'ret=untracked' "$t") + 2))"

run_mode no-returns fake CUDA_TRACE_RETURNS=0
expect "no-returns: calls logged without results" test "$(grep -c '^CR ' "$work"/no-returns/trace.*.log | awk -F: '{ s += $2 } END { print s }')" = 0

run_mode no-copies fake CUDA_TRACE_COPY_TABLES=0
expect "no-copies: the real table is handed out" grep -qE "^EXP .* uuid=$uuid_sized rc=0 table=([0-9a-f]+) first=56 copy=\1 mode=real$" "$work"/no-copies/trace.*.log

run_mode nocopy-one fake CUDA_TRACE_NOCOPY=c693336e,FFFF
expect "nocopy: the named table is handed out as it is" grep -qE "^EXP .* uuid=$uuid_nosize rc=0 table=([0-9a-f]+) first=[0-9]+ copy=\1 mode=real$" "$work"/nocopy-one/trace.*.log
expect "nocopy: the others are still copied" grep -qE "^XT table=$uuid_sized " "$work"/nocopy-one/trace.*.log

run_mode shallow fake CUDA_TRACE_TABLES='*:shallow'
expect "shallow: a copy at its own address" grep -qE "^EXP .* uuid=$uuid_sized rc=0 table=([0-9a-f]+) first=56 copy=[0-9a-f]+ mode=shallow$" "$work"/shallow/trace.*.log
expect "shallow: its slots go straight to the driver" test "$(grep -c '^XE ' "$work"/shallow/trace.*.log | awk -F: '{ s += $2 } END { print s }')" = 0

run_mode inplace fake CUDA_TRACE_TABLES="*:real,${uuid_sized:0:8}:inplace@1+4"
expect "inplace: the driver's table itself" grep -qE "^EXP .* uuid=$uuid_sized rc=0 table=([0-9a-f]+) first=56 copy=\1 mode=inplace$" "$work"/inplace/trace.*.log
expect "inplace: the chosen slots are logged" grep -qE "^XR .* table=$uuid_sized slot=4 ret=24 rdx=7" "$work"/inplace/trace.*.log
expect "inplace: the others are not" test "$(grep -cE "^XE .* table=$uuid_sized slot=5 " "$work"/inplace/trace.*.log | awk -F: '{ s += $2 } END { print s }')" = 0
expect "inplace: the other table is handed out as it is" grep -qE "^EXP .* uuid=$uuid_nosize rc=0 table=([0-9a-f]+) first=[0-9]+ copy=\1 mode=real$" "$work"/inplace/trace.*.log

run_mode anon fake CUDA_TRACE_TABLES='*:anon'
expect "anon: the driver's table itself" grep -qE "^EXP .* uuid=$uuid_nosize rc=0 table=([0-9a-f]+) first=[0-9]+ copy=\1 mode=anon$" "$work"/anon/trace.*.log
expect "anon: slots reached through anonymous trampolines are logged" grep -qE "^XR .* table=$uuid_sized slot=1 ret=0 rdx=[0-9a-f]+ p1'=c9925b24edb67f4811daa36c35fec790" "$work"/anon/trace.*.log
expect "anon: the words point outside every loaded object" grep -qE "^XW table=$uuid_sized word=1 value=[0-9a-f]+ kind=code stub=[0-9a-f]+ at=libcuda.so.1" "$work"/anon/trace.*.log

run_mode interposable fake-interposable
expect "interposable: the driver's answer is the shim's own stub, handed out as it is" \
    grep -qE '^GPA .* sym=cuMemAlloc ver=3020 .* real=shim\+0x[0-9a-f]+\(cuMemAlloc_v2\) given=real$' "$work"/interposable/trace.*.log

if [ "$failures" = 0 ]; then echo "cuda-trace check: PASSED"; else echo "cuda-trace check: $failures FAILED"; fi
[ "$failures" = 0 ]
