#!/usr/bin/env bash
# soak.sh - 10-minute soak: wrk on an origin and an edge while a new filter is published every second
#
# Usage: bench/soak.sh            (SOAK_SECONDS=600, SOAK_CLIENTS=8)
# Builds a plain tree in build/bench (or BUILD), then runs the same logic
# as the CI test tests/integration/it_soak.sh with wrk (bench/soak.lua,
# one connection per thread) when it is installed (`make deps-bench`),
# else with rawhttp.py's clients. Asserts zero unexpected statuses, no
# filter version going down per client, RSS within 5 % and fds flat from
# minute 1 to the end; prints the figures docs/SECURITY.md quotes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/bench}
make --no-print-directory BUILD="$BUILD" SANITIZE= "$BUILD/revcheckd" "$BUILD/filterbuild" >/dev/null
SOAK_SECONDS=${SOAK_SECONDS:-600} SOAK_CLIENTS=${SOAK_CLIENTS:-8} \
    SOAK_LOAD=${SOAK_LOAD:-wrk} REVCHECK_SRC=$PWD \
    REVCHECKD=$PWD/$BUILD/revcheckd FILTERBUILD=$PWD/$BUILD/filterbuild \
    bash tests/integration/it_soak.sh
