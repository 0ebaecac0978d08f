# env.sh - what a bench script starts with: the tree, the build, its binaries and tests/integration/lib.sh
#
# Source it from a bench/*.sh script (bash): sets ROOT (the source tree),
# BUILD (absolute; default build/bench), exports REVCHECK_SRC, REVCHECKD
# and FILTERBUILD (from the environment, else BUILD's), sources
# tests/integration/lib.sh (its $T, rc_start, nginx helpers, cleanup at
# exit) and turns `set -e` off again: a benchmark reports what failed and
# goes on.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build/bench}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export REVCHECK_SRC=$ROOT REVCHECKD=${REVCHECKD:-$BUILD/revcheckd}
export FILTERBUILD=${FILTERBUILD:-$BUILD/filterbuild}
. "$ROOT/tests/integration/lib.sh"
set +e
