# shellcheck shell=bash
# shellcheck disable=SC2034 # DRY_RUN is read by the sourcing script
# The start of gpu/validate.sh, gpu/busy-shutdown.sh, gpu/module-globals.sh and bench/run.sh, whose one
# argument is --dry-run: sets DRY_RUN (1 with --dry-run, 0 with no argument; anything else is a usage
# error, exit 2), then sources gpu/lib.sh. Sourced: it reads the script's own $1, and the usage error
# comes before gpu/lib.sh, so that it leaves nothing behind (no OUT, no BUILD_DIR).
DRY_RUN=0
case "${1:-}" in
    --dry-run) DRY_RUN=1 ;;
    "") ;;
    *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac

# shellcheck source=gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
