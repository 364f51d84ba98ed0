#!/usr/bin/env bash
# The Neovim plugin (packaging/editors/nvim) against a real memqd: headless nvim runs nvim_test.lua on a real file in
# a temp git repository, once with no daemon (BufEnter stays silent, :MemqRecall says memqd is not running) and once
# with a daemon on a temp socket (save, recall window, BufEnter hints, reconnect after a daemon restart).
# Usage: nvim_test.sh BIN_DIR SOURCE_DIR. Exits 77 (skipped) when nvim is not installed.
set -euo pipefail

bin_dir=${1:?usage: nvim_test.sh BIN_DIR SOURCE_DIR}
source_dir=${2:?usage: nvim_test.sh BIN_DIR SOURCE_DIR}
bin_dir=$(cd "$bin_dir" && pwd)
source_dir=$(cd "$source_dir" && pwd)

if ! command -v nvim >/dev/null 2>&1; then
  echo "SKIP: nvim is not installed (Debian: apt-get install neovim)"
  exit 77
fi
[[ -x "$bin_dir/memqd" ]] || { echo "FAIL: no memqd in $bin_dir"; exit 1; }
echo "$(nvim --version | head -n 1)"

# Short: the socket path must fit in sun_path (108 bytes).
scratch=$(mktemp -d /tmp/mq-nvim.XXXXXX)
socket="$scratch/memqd.sock"
stop_daemon() {
  if [[ -f "$scratch/memqd.pid" ]]; then
    kill "$(cat "$scratch/memqd.pid")" 2>/dev/null || true
    for _ in $(seq 100); do [[ -f "$scratch/memqd.pid" ]] || break; sleep 0.05; done
  fi
}
trap 'stop_daemon; rm -rf "$scratch"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# A real repository with two committed files; nvim edits them from the repository's root.
repo="$scratch/repo"
mkdir -p "$repo/src"
printf 'int retry_count = 0;\nint main(void) { return retry_count; }\n' >"$repo/src/app.c"
printf 'int helper(void) { return 1; }\n' >"$repo/src/util.c"
git -C "$repo" init -q
git -C "$repo" add src
git -C "$repo" -c user.name=memq -c user.email=memq@example.invalid commit -q -m "initial"

# Runs the Lua test script in PHASE; it writes one line per check to $results and quits non-zero on a failure.
# `timeout` bounds it even if nvim itself hangs; vim.wait bounds every wait inside the script.
run_nvim() {
  local phase=$1 results="$scratch/results-$1.txt" rc=0
  (cd "$repo" && MEMQ_SOCKET="$socket" MEMQ_DATA_DIR="$scratch/data" MEMQ_TEST_PHASE="$phase" \
     MEMQ_TEST_RESULTS="$results" MEMQ_TEST_MEMQD="$bin_dir/memqd" MEMQ_TEST_SCRATCH="$scratch" \
     timeout 90 nvim --headless -u NONE -i NONE -n \
       --cmd "set rtp+=$source_dir/packaging/editors/nvim" \
       -c "luafile $source_dir/tests/integration/nvim_test.lua" </dev/null) >"$scratch/nvim-$phase.log" 2>&1 || rc=$?
  cat "$results" 2>/dev/null || true
  if [[ $rc -ne 0 ]]; then
    cat "$scratch/nvim-$phase.log"
    fail "nvim exited $rc in phase $phase"
  fi
  grep -q '^PASS' "$results" || fail "phase $phase did not report PASS"
  ! grep -q '^FAIL' "$results" || fail "phase $phase reported a failure"
}

# 1. No daemon on the socket.
run_nvim nodaemon

# 2. A daemon on the socket (detached; it reports readiness before memqd returns).
"$bin_dir/memqd" --socket "$socket" --data-dir "$scratch/data" --log-file "$scratch/memqd.log" ||
  fail "memqd did not start"
run_nvim daemon

# The note saved through the plugin is in the repository's project database, attached to the file.
[[ -f "$repo/.git/memq/memory.db" ]] || fail "no project database in $repo/.git/memq"
echo "PASS: nvim plugin"
