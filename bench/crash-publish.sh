#!/usr/bin/env bash
# crash-publish.sh - 200 SIGKILLs of filterbuild mid-publish (and 20 of revcheckd mid-reload): the directory always verifies
#
# Usage: bench/crash-publish.sh [KILLS [DAEMON_KILLS]]   (defaults 200 and 20)
# Builds a plain (unsanitized) tree in build/bench unless BUILD names
# another, then runs tests/integration/it_crash.sh with the larger counts.
# The CI version (20 and 6 kills) runs in `make test`. Exits non-zero when
# any kill left the directory unverifiable or the daemon did not recover.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/bench}
make --no-print-directory BUILD="$BUILD" SANITIZE= "$BUILD/revcheckd" "$BUILD/filterbuild" >/dev/null
start=$(date +%s)
CRASH_KILLS=${1:-200} DAEMON_KILLS=${2:-20} REVCHECK_SRC=$PWD \
    REVCHECKD=$PWD/$BUILD/revcheckd FILTERBUILD=$PWD/$BUILD/filterbuild \
    bash tests/integration/it_crash.sh
echo "crash-publish: done in $(( $(date +%s) - start )) s"
