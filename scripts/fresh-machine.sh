#!/usr/bin/env bash
# Proves the README's set-up on a fresh machine. It debootstraps a minimal Debian 12 (bookworm,
# variant minbase, plus build-essential, ca-certificates, curl and git) into a temporary directory,
# gives it this machine's Rust toolchain (mounted read-only; CARGO_HOME starts empty, so crates are
# downloaded as for a new user), clones this repository's HEAD into it and runs the two commands of
# the README's "Set-up" section exactly as written, as root inside the new system. It prints each
# step's result and time, and a summary of the test run. CA certificates added to this machine
# (/usr/local/share/ca-certificates) are copied in, as the network may need them.
#
# Needs root (debootstrap, chroot, mounts; debootstrap is installed with apt-get when missing) and
# network access to the Debian mirror and crates.io. On every way out it stops what runs inside,
# unmounts everything and removes the directory, unless --keep is given (then the directory stays,
# unmounted). Only committed work is tested: HEAD is cloned, not the working tree.
#
# Usage: scripts/fresh-machine.sh [--keep] [--verbose] [--log-dir DIR]
#   --verbose      also print everything the two commands print (it always goes to the step logs)
#   --log-dir DIR  keep the step logs in DIR
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

keep=false
verbose=false
log_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=true ;;
    --verbose) verbose=true ;;
    --log-dir) log_dir="$2"; shift ;;
    *) echo "usage: $0 [--keep] [--verbose] [--log-dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ "$(id -u)" -ne 0 ]; then
  echo "error: $0 needs root (debootstrap, chroot and mounts)" >&2
  echo "  hint: sudo $0" >&2
  exit 1
fi
repository=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
head=$(git -C "$repository" rev-parse HEAD)
if ! git -C "$repository" diff --quiet HEAD; then
  echo "note: the working tree has uncommitted changes; only HEAD ($head) is tested" >&2
fi
toolchain=$(rustc --print sysroot)
[ -x "${toolchain}/bin/cargo" ] || { echo "error: no cargo in the toolchain at ${toolchain}" >&2; exit 1; }

started_all=$SECONDS
elapsed() { # SECONDS_SINCE
  local seconds=$((SECONDS - $1))
  printf '%dm%02ds' $((seconds / 60)) $((seconds % 60))
}
step() { # NAME RESULT START
  printf '%-44s %-8s %s\n' "$1" "$2" "$(elapsed "$3")"
}

work=$(mktemp -d -t netctl-fresh-machine.XXXXXX)
machine="${work}/machine"
logs="${work}/logs"
mkdir -p "$logs"

# Mount points under the machine, deepest first.
mounts_inside() {
  awk -v prefix="${machine}/" '$2 == substr(prefix, 1, length(prefix) - 1) || index($2, prefix) == 1 { print $2 }' /proc/mounts | sort -r
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  # Whatever still runs inside (an interrupted build, etcd, a test server).
  local process
  for process in /proc/[0-9]*; do
    if [ "$(readlink "${process}/root" 2>/dev/null)" = "$machine" ]; then
      kill -KILL "${process#/proc/}" 2>/dev/null || true
    fi
  done
  local mount_point attempt
  for attempt in 1 2 3 4 5; do
    for mount_point in $(mounts_inside); do
      umount "$mount_point" 2>/dev/null || umount -l "$mount_point" 2>/dev/null || true
    done
    [ -z "$(mounts_inside)" ] && break
    sleep 1
  done
  if [ -n "$(mounts_inside)" ]; then
    # Never remove a directory with the host's /dev or /proc still mounted inside it.
    echo "error: could not unmount: $(mounts_inside | tr '\n' ' '); ${work} is left in place" >&2
    exit 1
  fi
  if [ -n "$log_dir" ]; then
    mkdir -p "$log_dir" && cp "$logs"/* "$log_dir"/ 2>/dev/null || true
  fi
  if [ "$keep" = true ]; then
    echo "the machine stays in ${machine} (unmounted)" >&2
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

echo "fresh machine: Debian 12 (bookworm) minbase + build-essential ca-certificates curl git"
echo "repository:    ${repository} at ${head}"
echo "toolchain:     $("${toolchain}/bin/rustc" --version) (read-only), empty CARGO_HOME"
echo

start=$SECONDS
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
  apt-get update -qq >"${logs}/debootstrap.log" 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >>"${logs}/debootstrap.log" 2>&1
fi
if ! PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase --include=build-essential,ca-certificates,curl,git \
  bookworm "$machine" "$mirror" >>"${logs}/debootstrap.log" 2>&1; then
  step "debootstrap bookworm (minbase)" FAILED "$start"
  tail -n 30 "${logs}/debootstrap.log"
  exit 1
fi
step "debootstrap bookworm (minbase)" ok "$start"

start=$SECONDS
mount -t proc proc "${machine}/proc"
mount -t sysfs sysfs "${machine}/sys"
mount --bind /dev "${machine}/dev"
mount --bind /dev/pts "${machine}/dev/pts"
mkdir -p "${machine}/opt/rust"
mount --bind "$toolchain" "${machine}/opt/rust"
mount -o remount,bind,ro "${machine}/opt/rust"
git clone --quiet --no-hardlinks --no-checkout "$repository" "${machine}/root/netctl"
git -C "${machine}/root/netctl" checkout --quiet --detach "$head"
# Certificate authorities this machine's administrator added (a TLS-inspecting proxy, a site CA):
# the network, not the project, needs them, and without them nothing reaches crates.io from here.
site_cas=(/usr/local/share/ca-certificates/*.crt)
if [ -e "${site_cas[0]}" ]; then
  cp "${site_cas[@]}" "${machine}/usr/local/share/ca-certificates/"
  chroot "$machine" /usr/sbin/update-ca-certificates >/dev/null 2>&1
fi
step "mounts, toolchain, clone of HEAD" ok "$start"
[ ! -e "${site_cas[0]}" ] || echo "  (with this machine's ${#site_cas[@]} added CA certificate(s) from /usr/local/share/ca-certificates)"

# The README's set-up commands: the `sh` block of its "Set-up" section, comments dropped.
mapfile -t commands < <(
  sed -n '/^## Set-up/,/^## /p' "${machine}/root/netctl/README.md" |
    sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' | sed 's/[[:space:]]*#.*$//' | sed '/^[[:space:]]*$/d'
)
if [ ${#commands[@]} -eq 0 ]; then
  echo "error: no commands found in the README's Set-up section" >&2
  exit 1
fi

# A new root shell on the new machine, with a Rust toolchain on PATH as rustup would put it.
inside() { # COMMAND
  chroot "$machine" /usr/bin/env -i HOME=/root USER=root LANG=C.UTF-8 TERM=dumb \
    PATH=/root/.cargo/bin:/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CARGO_HOME=/root/.cargo \
    /bin/bash -c "cd /root/netctl && $1"
}

failed=0
index=0
for command in "${commands[@]}"; do
  index=$((index + 1))
  log="${logs}/command-${index}.log"
  start=$SECONDS
  if [ "$verbose" = true ]; then
    inside "$command" 2>&1 | tee "$log" && status=0 || status=${PIPESTATUS[0]}
  else
    inside "$command" >"$log" 2>&1 && status=0 || status=$?
  fi
  if [ "$status" -eq 0 ]; then
    step "$command" ok "$start"
  else
    step "$command" "FAILED" "$start"
    echo "  exit status ${status}; the end of its output:"
    tail -n 40 "$log" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
done

# The test run, from cargo's own lines: binaries started, binaries that reported, tests counted.
test_log=$(grep -l -- '^     Running ' "${logs}"/command-*.log 2>/dev/null | tail -n 1 || true)
if [ -n "$test_log" ]; then
  binaries=$(grep -c -- '^     Running ' "$test_log" || true)
  reported=$(grep -c '^test result: ' "$test_log" || true)
  count() { # WORD
    grep '^test result: ' "$test_log" | grep -o "[0-9]* $1" | awk '{ sum += $1 } END { print sum + 0 }'
  }
  echo
  echo "test binaries: ${binaries} run, ${reported} reported a result"
  echo "tests:         $(count passed) passed, $(count failed) failed, $(count ignored) ignored"
  grep -E '^test .* \.\.\. FAILED$' "$test_log" | sed 's/^test \(.*\) \.\.\. FAILED$/failed:        \1/' || true
else
  echo
  echo "test binaries: none ran"
  failed=$((failed + 1))
fi
if [ -n "$test_log" ] && [ "$binaries" -ne "$reported" ]; then
  failed=$((failed + 1))
fi
echo "total:         $(elapsed "$started_all")"
if [ "$failed" -eq 0 ]; then
  echo "result:        PASSED"
else
  echo "result:        FAILED"
  exit 1
fi
