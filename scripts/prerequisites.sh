#!/usr/bin/env bash
# Installs what building and testing netctl needs from Debian packages, only when missing:
#   protobuf-compiler  protoc, needed by etcd-client's build script
#   etcd-server        the real etcd the tests and the quickstart start on loopback
#   etcd-client        etcdctl, used by the tests to seed and inspect the datastore
#   dnsmasq-base       a local DNS server for the SRV discovery tests
set -euo pipefail

missing=()
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
command -v dnsmasq >/dev/null 2>&1 || [ -x /usr/sbin/dnsmasq ] || missing+=(dnsmasq-base)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "error: ${missing[*]} missing and not running as root" >&2
    echo "  hint: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
