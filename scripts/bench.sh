#!/usr/bin/env bash
# The side-by-side benchmark (docs/benchmarks.md): starts its own etcd on loopback, loads the data,
# and times netctl against etcdctl and raw batched etcd transactions, interleaved in one run, then
# prints medians, peak memory and ratios for every target of the scale issue.
#
#   scripts/bench.sh                      # 10k and 100k lists, 10k writes, 100k validate, 1k/10k upgrades
#   scripts/bench.sh --quick              # 10k everywhere, 3 repetitions (a few minutes)
#   scripts/bench.sh --only lists         # sections: lists, writes, validate, upgrade, ipam, migrate (comma-separated)
#   scripts/bench.sh --only migrate --quick   # migration export of 100k host endpoints + 4,096 blocks (--migrate-size N)
#   scripts/bench.sh --only ipam --ipam-sizes 10000,100000   # 4,096 /26 blocks per 100k allocations
#   scripts/bench.sh --repetitions 7 --timeout 120
#   scripts/bench.sh --list-sizes 10000,50000 --write-size 5000 --validate-size 20000 --upgrade-sizes 500,2000
#
# NETCTL_BENCH_BINARY=/path/to/netctl measures another build (say, the one before a change).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin:/sbin"
command -v etcd >/dev/null || { echo "etcd not found: apt-get install etcd-server" >&2; exit 1; }
command -v etcdctl >/dev/null || { echo "etcdctl not found: apt-get install etcd-client" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 1; }
exec cargo bench --bench side_by_side -- "$@"
