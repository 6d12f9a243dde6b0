#!/usr/bin/env bash
# Builds netctl and installs the binary (and its kubectl plugin link), the bash/zsh/fish completions, the man pages and the JSON
# Schemas under PREFIX (default /usr/local; `PREFIX=$HOME/.local scripts/install.sh` needs no root).
# With NETCTL_BINARY=path it installs that binary instead of building one.
set -euo pipefail

prefix="${PREFIX:-/usr/local}"
cd "$(dirname "$0")/.."

if [[ -n "${NETCTL_BINARY:-}" ]]; then
    binary="$NETCTL_BINARY"
else
    cargo build --release --quiet
    binary="target/release/netctl"
fi

install -d "$prefix/bin" \
    "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" \
    "$prefix/share/fish/vendor_completions.d" \
    "$prefix/share/man/man1" \
    "$prefix/share/netctl/schemas"
install -m 0755 "$binary" "$prefix/bin/netctl"
# The kubectl plugin form: kubectl runs `kubectl-netctl` for `kubectl netctl ...`, and netctl
# started under that name says `kubectl netctl` in its help.
ln -sfn netctl "$prefix/bin/kubectl-netctl"
netctl="$prefix/bin/netctl"
# The completion scripts call "$netctl" back on each TAB (kinds, formats, names in the datastore).
"$netctl" completion bash > "$prefix/share/bash-completion/completions/netctl"
"$netctl" completion zsh > "$prefix/share/zsh/site-functions/_netctl"
"$netctl" completion fish > "$prefix/share/fish/vendor_completions.d/netctl.fish"
"$netctl" man --dir "$prefix/share/man/man1"
# Every kind for each release line; `get --schema-modeline` points editors here.
"$netctl" schema --all "$prefix/share/netctl/schemas"

echo "installed $("$netctl" --version) to $prefix/bin/netctl"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on PATH: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
