#!/usr/bin/env bash
# Runs the whole test suite: unit tests, the integration tests (one binary, tests/it/) against real
# etcd servers (plain, TLS, RBAC, 3-member cluster) and a local DNS server that the tests start on
# loopback, and the fuzz targets (tests/fuzz.rs, 3 s each unless NETCTL_FUZZ_SECONDS says otherwise).
#
# Every test binary runs even when an earlier one fails (`--no-fail-fast`), and nothing waits forever:
# the processes of a test that runs longer than NETCTL_TEST_TIME_LIMIT seconds are killed, so it fails
# and the others go on, and a test that still does not end stops its binary
# (tests/it/support/watchdog.rs, default 600); the run as a whole stops after
# NETCTL_TEST_SUITE_TIME_LIMIT seconds (default 3600) after the build. Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/prerequisites.sh
# etcd's Debian package ships in /usr/bin, dnsmasq in /usr/sbin: make sure both are on PATH.
export PATH="$PATH:/usr/sbin:/sbin"
# Backtraces make expected-error output unreadable; tests that want one set it themselves.
unset RUST_BACKTRACE

cargo test --no-fail-fast --lib --bins --tests --no-run "$@"

# `timeout` runs the suite in a process group of its own, so on expiry it kills the test binaries
# and their servers too; it is started in the background so that Ctrl-C reaches it through the trap.
limit="${NETCTL_TEST_SUITE_TIME_LIMIT:-3600}"
timeout --kill-after=30 "$limit" cargo test --no-fail-fast --lib --bins --tests "$@" &
suite=$!
signalled=false
trap 'signalled=true; kill -INT "$suite" 2>/dev/null || true' INT
trap 'signalled=true; kill -TERM "$suite" 2>/dev/null || true' TERM
status=0
wait "$suite" || status=$?
# A trapped signal makes `wait` return at once; wait again for the suite to stop.
while [ "$signalled" = true ]; do
  signalled=false
  status=0
  wait "$suite" || status=$?
done
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "error: the test suite did not finish within ${limit} s (NETCTL_TEST_SUITE_TIME_LIMIT)" >&2
fi
exit "$status"
