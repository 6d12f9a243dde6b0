#!/usr/bin/env bash
# Installs what building netctl, the quickstart and the test suite need, from Debian 12 packages,
# only when missing. Each package is checked by a file it provides, not only by a command:
#   protobuf-compiler  protoc, run by etcd-client's build script
#   libprotobuf-dev    google/protobuf/descriptor.proto, which etcd's .proto files import (only a
#                      Recommends of protobuf-compiler, so it is named here)
#   etcd-server        the real etcd that the tests and the quickstart start on loopback
#   etcd-client        etcdctl, which seeds and inspects the datastore in the tests and the quickstart
#   dnsmasq-base       a local DNS server for the SRV discovery tests
#   kubernetes-client  kubectl, run against the in-process Kubernetes API test server
#   curl               the end-to-end tests fetch a manifest with it
#   python3-yaml       PyYAML (and python3), which reads netctl's YAML output back in the tests
#                      (an independent YAML 1.1 reader; the quickstart does not need it)
# It also makes sure `localhost` resolves to 127.0.0.1 (a minimal system may have no /etc/hosts):
# the SRV discovery tests publish that host name.
# Everything else the tests run (sh, grep, sleep, script, unshare, setpriv) is in every Debian system.
set -euo pipefail

# The Debian file of each package, or another install of the same program found on PATH.
has_program() { # FILE NAME
  [ -x "$1" ] || command -v "$2" >/dev/null 2>&1
}
has_protobuf_includes() {
  local dir
  for dir in ${PROTOC_INCLUDE:-} /usr/include /usr/local/include; do
    [ -f "${dir}/google/protobuf/descriptor.proto" ] && return 0
  done
  return 1
}
missing_packages() {
  has_program /usr/bin/protoc protoc || echo protobuf-compiler
  has_protobuf_includes || echo libprotobuf-dev
  has_program /usr/bin/etcd etcd || echo etcd-server
  has_program /usr/bin/etcdctl etcdctl || echo etcd-client
  has_program /usr/sbin/dnsmasq dnsmasq || echo dnsmasq-base
  has_program /usr/bin/kubectl kubectl || echo kubernetes-client
  has_program /usr/bin/curl curl || echo curl
  has_pyyaml || echo python3-yaml
}
has_pyyaml() {
  [ -f /usr/lib/python3/dist-packages/yaml/__init__.py ] ||
    { command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' >/dev/null 2>&1; }
}
localhost_resolves() {
  getent ahostsv4 localhost 2>/dev/null | grep -q '^127\.0\.0\.1 '
}

mapfile -t missing < <(missing_packages)
fix_hosts=false
localhost_resolves || fix_hosts=true
if [ ${#missing[@]} -eq 0 ] && [ "$fix_hosts" = false ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "error: prerequisites are missing and this is neither root nor has sudo" >&2
    [ ${#missing[@]} -eq 0 ] || echo "  hint: as root: apt-get update && apt-get install -y ${missing[*]}" >&2
    [ "$fix_hosts" = false ] || echo "  hint: as root: echo '127.0.0.1 localhost' >> /etc/hosts" >&2
    exit 1
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  mapfile -t still_missing < <(missing_packages)
  if [ ${#still_missing[@]} -gt 0 ]; then
    echo "error: still missing after apt-get install: ${still_missing[*]}" >&2
    exit 1
  fi
fi

if [ "$fix_hosts" = true ]; then
  # The lines Debian's installer writes; the tests resolve `localhost` with the system resolver.
  echo "\`localhost\` does not resolve: adding it to /etc/hosts" >&2
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' | $sudo tee -a /etc/hosts >/dev/null
  if ! localhost_resolves; then
    echo "error: \`localhost\` still does not resolve to 127.0.0.1; check /etc/hosts and /etc/nsswitch.conf" >&2
    exit 1
  fi
fi
