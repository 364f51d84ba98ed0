#!/bin/sh
# Floor gate for the default ranker (docs/ranking.md): runs the retrieval benchmark on iproute2_2018h2 and fails when
# MRR@10 or R@3 falls below the floor. With the dataset's repo.bundle it runs with --lines (the real history) and
# gates both modes: files only against MRR_FLOOR and R3_FLOOR, with lines against LINES_MRR_FLOOR and
# LINES_R3_FLOOR. Skipped (exit 77) when the benchmark data is not there.
# Usage: retrieval_floor_test.sh BIN_DIR BENCH_DIR [MRR_FLOOR R3_FLOOR [LINES_MRR_FLOOR LINES_R3_FLOOR]]
# The environment variable MEMQ_BENCH_DIR, when set, overrides BENCH_DIR.
set -u
BIN=${1:?usage: retrieval_floor_test.sh BIN_DIR BENCH_DIR [MRR_FLOOR R3_FLOOR]}
DIR=${MEMQ_BENCH_DIR:-${2:-}}
MRR_FLOOR=${3:-0.355}
R3_FLOOR=${4:-0.416}
LINES_MRR_FLOOR=${5:-0.75}
LINES_R3_FLOOR=${6:-0.83}
DATA="$DIR/data/iproute2_2018h2"
if [ -z "$DIR" ] || [ ! -f "$DATA/corpus.jsonl" ] || [ ! -f "$DATA/queries.jsonl" ]; then
  echo "SKIPPED: benchmark data not found at '$DATA' (set MEMQ_BENCH_DIR or the CMake cache entry MEMQ_BENCH_DIR)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIPPED: python3 is needed to read the benchmark's JSON"
  exit 77
fi
LINES=""
if [ -f "$DATA/repo.bundle" ]; then LINES="--lines"; fi
OUT=$("$BIN/memq" bench retrieval --dataset "$DATA" --ranker default $LINES --json) || {
  echo "FAIL: memq bench retrieval exited with $?"
  exit 1
}
printf '%s\n' "$OUT" | python3 -c '
import json, sys
floors = {"files": (float(sys.argv[1]), float(sys.argv[2])), "lines": (float(sys.argv[3]), float(sys.argv[4]))}
bad = []
for r in json.load(sys.stdin)["rankers"]:
    mode = r.get("mode", "files")
    mrr_floor, r3_floor = floors[mode]
    print("default ranker on iproute2_2018h2, %s: R@1 %.3f R@3 %.3f R@10 %.3f MRR@10 %.3f (p50 %.1f ms)" % (
        mode, r["r_at_1"], r["r_at_3"], r["r_at_10"], r["mrr_at_10"], r["latency_p50_ms"]))
    print("floors (%s): MRR@10 >= %.3f, R@3 >= %.3f" % (mode, mrr_floor, r3_floor))
    if r["mrr_at_10"] < mrr_floor: bad.append("%s: MRR@10 %.3f < %.3f" % (mode, r["mrr_at_10"], mrr_floor))
    if r["r_at_3"] < r3_floor: bad.append("%s: R@3 %.3f < %.3f" % (mode, r["r_at_3"], r3_floor))
    if r["queries"] == 0: bad.append("%s: no queries were run" % mode)
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("PASS")
' "$MRR_FLOOR" "$R3_FLOOR" "$LINES_MRR_FLOOR" "$LINES_R3_FLOOR"
