#!/usr/bin/env bash
# Runs the whole test suite: unit tests, and integration tests against real etcd servers (plain, TLS,
# RBAC, 3-member cluster) and a local DNS server that the tests start on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/prerequisites.sh
# etcd's Debian package ships in /usr/bin, dnsmasq in /usr/sbin: make sure both are on PATH.
export PATH="$PATH:/usr/sbin:/sbin"
# Backtraces make expected-error output unreadable; tests that want one set it themselves.
unset RUST_BACKTRACE
cargo test --lib --bins --tests "$@"
