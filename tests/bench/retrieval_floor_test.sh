#!/bin/sh
# Floor gate for the default ranker (docs/ranking.md): runs the held-out retrieval benchmark (iproute2_2018h2, never
# used for tuning) and fails when MRR@10 or R@3 falls below the floor. Skipped (exit 77) when the benchmark data is
# not there. Usage: retrieval_floor_test.sh BIN_DIR BENCH_DIR [MRR_FLOOR R3_FLOOR]
# The environment variable MEMQ_BENCH_DIR, when set, overrides BENCH_DIR.
set -u
BIN=${1:?usage: retrieval_floor_test.sh BIN_DIR BENCH_DIR [MRR_FLOOR R3_FLOOR]}
DIR=${MEMQ_BENCH_DIR:-${2:-}}
MRR_FLOOR=${3:-0.355}
R3_FLOOR=${4:-0.416}
DATA="$DIR/data/iproute2_2018h2"
if [ -z "$DIR" ] || [ ! -f "$DATA/corpus.jsonl" ] || [ ! -f "$DATA/queries.jsonl" ]; then
  echo "SKIPPED: benchmark data not found at '$DATA' (set MEMQ_BENCH_DIR or the CMake cache entry MEMQ_BENCH_DIR)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIPPED: python3 is needed to read the benchmark's JSON"
  exit 77
fi
OUT=$("$BIN/memq" bench retrieval --dataset "$DATA" --ranker default --json) || {
  echo "FAIL: memq bench retrieval exited with $?"
  exit 1
}
printf '%s\n' "$OUT" | python3 -c '
import json, sys
mrr_floor, r3_floor = float(sys.argv[1]), float(sys.argv[2])
r = json.load(sys.stdin)["rankers"][0]
print("default ranker on iproute2_2018h2: R@1 %.3f R@3 %.3f R@10 %.3f MRR@10 %.3f (p50 %.1f ms)" % (
    r["r_at_1"], r["r_at_3"], r["r_at_10"], r["mrr_at_10"], r["latency_p50_ms"]))
print("floors: MRR@10 >= %.3f, R@3 >= %.3f" % (mrr_floor, r3_floor))
bad = []
if r["mrr_at_10"] < mrr_floor: bad.append("MRR@10 %.3f < %.3f" % (r["mrr_at_10"], mrr_floor))
if r["r_at_3"] < r3_floor: bad.append("R@3 %.3f < %.3f" % (r["r_at_3"], r3_floor))
if r["queries"] == 0: bad.append("no queries were run")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("PASS")
' "$MRR_FLOOR" "$R3_FLOOR"
