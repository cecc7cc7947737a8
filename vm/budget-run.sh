#!/bin/sh
# Runs one program inside a test guest whose programs share a time budget (gpu/apps.sh's vm mode
# copies it to /usr/bin/ivcuda-budget-run; busybox sh). Under TCG a guest runs far fewer programs
# than the host would in the same time, so the host cannot know beforehand how many fit: it says on
# the kernel command line until when programs may start and how long each may take, and the guest
# keeps to it, so that QEMU powers off by itself before the host's limit would stop it mid-program.
#   ivcuda.deadline=S   guest uptime in seconds after which no program starts: this one then exits
#                       125 with an IVCUDA-SKIPPED line on stderr (the host reports "time budget")
#   ivcuda.timeout=S    at most this long per program (less when the deadline is nearer): SIGKILL,
#                       exit status 137, and a TIMEOUT line on stderr
# usage: budget-run.sh DIR PROGRAM [ARGS...]    runs PROGRAM in DIR (samples find data beside them)
deadline=
per=60
for word in $(cat /proc/cmdline); do
    case "$word" in
        ivcuda.deadline=*) deadline=${word#*=} ;;
        ivcuda.timeout=*) per=${word#*=} ;;
    esac
done
if [ -n "$deadline" ]; then
    up=$(cut -d. -f1 /proc/uptime)
    left=$((deadline - up))
    if [ "$left" -lt 5 ]; then
        echo "IVCUDA-SKIPPED time budget: guest uptime ${up}s, no program starts after ${deadline}s" >&2
        exit 125
    fi
    [ "$per" -gt "$left" ] && per=$left
fi
cd "$1" || exit 126
shift
timeout -s KILL "$per" "$@"
rc=$?
[ "$rc" = 137 ] && echo "TIMEOUT after ${per}s in the VM" >&2
exit "$rc"
