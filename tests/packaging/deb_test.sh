#!/usr/bin/env bash
# Builds the Debian package with CPack from a configured and built build directory, unpacks it into a scratch
# root, and checks what a user would get: both binaries run from /usr/bin, the compressed man pages, the systemd user
# units (with ExecStart pointing at /usr/bin/memqd), the bash, zsh and fish completions, the Neovim plugin, the
# copyright file, the changelog and docs/agents.md are there, and the package declares its runtime dependencies.
# When lintian is installed (make test installs it), the package has no lintian error or warning and none of its
# hardening tags.
# Usage: deb_test.sh BUILD_DIR. Exits 77 (skipped) when dpkg-deb or cpack is missing.
set -euo pipefail

build_dir=${1:?usage: deb_test.sh BUILD_DIR}
build_dir=$(cd "$build_dir" && pwd)

for tool in dpkg-deb cpack; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool is not installed"
    exit 77
  fi
done
[[ -f "$build_dir/CPackConfig.cmake" ]] || { echo "FAIL: $build_dir has no CPackConfig.cmake"; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/memq-deb-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# The package goes to the scratch folder, not the build folder, so a test run leaves nothing behind.
(cd "$build_dir" && cpack -G DEB -B "$scratch/out" >"$scratch/cpack.log" 2>&1) ||
  { cat "$scratch/cpack.log"; fail "cpack -G DEB failed"; }
shopt -s nullglob
debs=("$scratch"/out/memq_*.deb)
[[ ${#debs[@]} -eq 1 ]] || { cat "$scratch/cpack.log"; fail "expected one memq_*.deb, found ${#debs[@]}"; }
deb=${debs[0]}
echo "built $(basename "$deb")"

# Control fields.
[[ "$(dpkg-deb -f "$deb" Package)" == memq ]] || fail "package name is not memq"
maintainer=$(dpkg-deb -f "$deb" Maintainer)
[[ "$maintainer" =~ ^memq\ developers\ \<[^@\ ]+@[^@\ ]+\>$ ]] || fail "maintainer is not a name and an email: $maintainer"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libsqlite3-0 libgit2 libspdlog libfmt; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib"
done

# Contents.
root="$scratch/root"
dpkg-deb -x "$deb" "$root"
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/memq ./usr/bin/memqd ./usr/share/man/man1/memq.1.gz ./usr/share/man/man8/memqd.8.gz \
            ./usr/lib/systemd/user/memqd.socket ./usr/lib/systemd/user/memqd.service \
            ./usr/share/bash-completion/completions/memq ./usr/share/zsh/vendor-completions/_memq \
            ./usr/share/fish/vendor_completions.d/memq.fish ./usr/share/doc/memq/protocol.md \
            ./usr/share/doc/memq/agents.md ./usr/share/doc/memq/copyright ./usr/share/doc/memq/changelog.gz \
            ./usr/share/memq/editors/nvim/plugin/memq.lua ./usr/share/memq/editors/nvim/lua/memq/init.lua; do
  grep -qF " $path" <<<"$contents" || fail "$path is not in the package"
done

# The binaries run.
memq_version=$("$root/usr/bin/memq" --version) || fail "memq --version failed"
memqd_version=$("$root/usr/bin/memqd" --version) || fail "memqd --version failed"
echo "$memq_version / $memqd_version"
[[ "$memq_version" == "memq "* ]] || fail "unexpected memq --version output: $memq_version"
[[ "$memqd_version" == "memqd "* ]] || fail "unexpected memqd --version output: $memqd_version"

# The units point at the packaged daemon and keep its socket private.
service="$root/usr/lib/systemd/user/memqd.service"
socket="$root/usr/lib/systemd/user/memqd.socket"
grep -qx 'ExecStart=/usr/bin/memqd --foreground --idle-exit 600' "$service" || fail "memqd.service ExecStart is wrong"
grep -qx 'UMask=0077' "$service" || fail "memqd.service lacks UMask=0077"
grep -qx 'NoNewPrivileges=yes' "$service" || fail "memqd.service lacks NoNewPrivileges=yes"
grep -qx 'ListenStream=%t/memq/memqd.sock' "$socket" || fail "memqd.socket ListenStream is wrong"
grep -qx 'SocketMode=0600' "$socket" || fail "memqd.socket lacks SocketMode=0600"
grep -qx 'DirectoryMode=0700' "$socket" || fail "memqd.socket lacks DirectoryMode=0700"
! grep -q '@' "$service" || fail "memqd.service still holds an unreplaced @VARIABLE@"

# The man pages render without warnings, and the completion script parses.
if command -v man >/dev/null 2>&1; then
  for page in "$root/usr/share/man/man1/memq.1.gz" "$root/usr/share/man/man8/memqd.8.gz"; do
    warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man cannot render $page"
    [[ -z "$warnings" ]] || fail "man warns about $page: $warnings"
  done
fi
bash -n "$root/usr/share/bash-completion/completions/memq" || fail "the bash completion does not parse"
if command -v zsh >/dev/null 2>&1; then
  zsh -n "$root/usr/share/zsh/vendor-completions/_memq" || fail "the zsh completion does not parse"
fi
if command -v fish >/dev/null 2>&1; then
  fish -n "$root/usr/share/fish/vendor_completions.d/memq.fish" || fail "the fish completion does not parse"
fi

# lintian: no error, no warning, and the binaries carry Debian's hardening (fortify, bindnow, PIE, RELRO, stack
# protector). Its info-level tags are printed for the record.
if command -v lintian >/dev/null 2>&1; then
  tags=$(lintian --info --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' || true)
  [[ -n "$tags" ]] && echo "lintian:" && echo "$tags"
  ! grep -qE '^[EW]: ' <<<"$tags" || fail "lintian reports errors or warnings"
  ! grep -q 'hardening-' <<<"$tags" || fail "lintian reports missing hardening"
else
  echo "lintian is not installed: the lintian check is skipped"
fi

echo "PASS: $(basename "$deb")"
