#!/usr/bin/env python3
"""Offline tuning of the default ranker (docs/ranking.md).

Input: the JSONL written by `memq bench retrieval --dataset DIR --ranker default --dump FILE`: one line per query
with every candidate's raw signals (explain). This re-scores the candidates with a formula in Python and prints
R@1/R@3/R@10/MRR@10, so weights can be searched in seconds instead of re-running the benchmark (minutes).
The formula in `score()` mirrors defaultScore in daemon/recall/rankers.cc; keep them in step.

With --lines it re-weighs only the line terms (a dump of `--lines`, its "lines" rows): each candidate's score less
its line terms, plus the line shares (each term divided by its weight in rankers.cc, LINE_WEIGHTS below) at other
weights. At LINE_WEIGHTS it reproduces the dumped scores, which it checks before anything else.

Usage: rank_tune.py DUMP [--search]
       rank_tune.py DUMP --lines [--search]
"""
import itertools
import json
import math
import sys


def load(path, mode="files"):
    qs = []
    for line in open(path):
        q = json.loads(line)
        if q.get("ranker") != "default" or q.get("mode", mode) != mode:
            continue
        cands = []
        for c in q["candidates"]:
            s = c["explain"].get("signals", {})
            s["id"] = c["id"]
            s["created_at"] = c["created_at"]
            s["terms"] = c["explain"].get("terms", {})
            cands.append(s)
        q["cands"] = cands
        qs.append(q)
    for q in qs:
        nfiles = len(q["files"])
        c = q["cands"]
        best = {k: min([x.get(k, 0) or 0 for x in c] + [0]) for k in
                ("text_bm25", "subject_bm25", "text_bm25_summary", "subject_bm25_summary", "bm25_trigram",
                 "bm25_unicode")}
        maxcc = max([x.get("cochange_strength", 0) for x in c if not x.get("file_affinity")] + [0])
        # newest first: created_at order among the candidates (ties by original order)
        order = sorted(range(len(c)), key=lambda i: c[i]["created_at"], reverse=True)
        for r, i in enumerate(order):
            c[i]["newness"] = 1.0 - r / max(1, len(c) - 1)
        for x in c:
            f = {}
            for k, v in best.items():
                f[k] = (x.get(k) or 0) / v if v < 0 and x.get(k) is not None else 0.0
            f["file"] = 1.0 if x.get("file_affinity") else 0.0
            f["mf"] = min(1.0, x.get("matched_files", 0) / nfiles) if nfiles and x.get("file_affinity") else 0.0
            f["frank"] = x.get("file_rank") or 0
            cc = x.get("cochange_strength", 0) if x.get("cochange_affinity") and not x.get("file_affinity") else 0
            f["cc"] = cc
            f["ccn"] = cc / maxcc if maxcc > 0 else 0
            f["sem"] = max(0.0, x.get("semantic") or 0)
            f["srank"] = x.get("subject_rank") or 0
            f["urank"] = x.get("fts_unicode") or 0
            f["trank"] = x.get("fts_trigram") or 0
            f["new"] = x["newness"]
            x["f"] = f
    return qs


def metrics(qs, scorer):
    r1 = r3 = r10 = mrr = 0.0
    n = 0
    for q in qs:
        total = q["relevant_total"]
        if total == 0:
            continue
        n += 1
        rel = set(q["relevant"])
        ranked = sorted(enumerate(q["cands"]), key=lambda ic: (-scorer(ic[1]["f"]), ic[0]))
        first = 0
        h1 = h3 = h10 = 0
        for rank, (_, c) in enumerate(ranked[:10], 1):
            if c["id"] in rel:
                first = first or rank
                h1 += rank <= 1
                h3 += rank <= 3
                h10 += 1
        r1 += h1 / total
        r3 += h3 / total
        r10 += h10 / total
        mrr += 1.0 / first if first else 0
    return {"R@1": r1 / n, "R@3": r3 / n, "R@10": r10 / n, "MRR@10": mrr / n}


def fmt(m):
    return "R@1 %.3f R@3 %.3f R@10 %.3f MRR@10 %.3f" % (m["R@1"], m["R@3"], m["R@10"], m["MRR@10"])


def current(f):  # the default ranker before tuning (rankers.cc at the start)
    return 1.0 * f["bm25_unicode"] + 0.25 * f["bm25_trigram"] + 0.9 * f["mf"] + 0.25 * f["cc"] + 0.6 * f["sem"]


def make(w):
    def s(f):
        v = (w["file"] * f["file"] + w["mf"] * f["mf"] + w["text"] * f[w.get("textkey", "text_bm25")] +
             w["subj"] * f[w.get("subjkey", "subject_bm25")] + w["tri"] * f["bm25_trigram"] + w["cc"] * f["cc"] +
             w["sem"] * f["sem"] + w.get("new", 0) * f["new"])
        return v
    return s


def coordinate_ascent(qs, scorer_of, w, keys, grid, allowed=lambda k, v: True, rounds=3):
    """Coordinate ascent on MRR@10 (R@3 as tie-break): each key in turn set to each grid value `allowed`, kept when
    it improves, for up to `rounds` passes. Returns the weights and their metrics."""
    def obj(w):
        m = metrics(qs, scorer_of(w))
        return (m["MRR@10"] + m["R@3"], m)

    best, bm = obj(w)
    for _ in range(rounds):
        improved = False
        for k in keys:
            for v in grid:
                if not allowed(k, v):
                    continue
                w2 = dict(w)
                w2[k] = v
                o, m = obj(w2)
                if o > best + 1e-9:
                    best, bm, w = o, m, w2
                    improved = True
        if not improved:
            break
    return w, bm


# The line terms of the default ranker and their weights (rankers.cc, kW).
LINE_WEIGHTS = {"lines_originated": 4.0, "lines_owned": 2.0, "lines_prior": 2.5, "lines_near": 0.5}


def add_line_parts(qs):
    """Each candidate's score without its line terms (f["base"]) and its line shares (f[term] in [0, 1])."""
    for q in qs:
        for x in q["cands"]:
            t = x["terms"]
            line = {k: t.get(k, 0.0) for k in LINE_WEIGHTS}
            x["f"]["base"] = t.get("relevance", 0.0) - sum(line.values())
            for k, w in LINE_WEIGHTS.items():
                x["f"][k] = line[k] / w


def line_scorer(w):
    return lambda f: f["base"] + sum(w[k] * f[k] for k in LINE_WEIGHTS)


def lines_main(path, search):
    qs = load(path, "lines")
    add_line_parts(qs)
    print("queries", len(qs))
    # At the ranker's own weights the re-scoring must give the dumped relevance back: else this file and rankers.cc
    # have drifted apart.
    worst = max((abs(line_scorer(LINE_WEIGHTS)(x["f"]) - x["terms"].get("relevance", 0.0))
                 for q in qs for x in q["cands"]), default=0.0)
    if worst > 1e-6:
        sys.exit("rank_tune.py: the line terms do not add up to the dumped relevance (off by %g); "
                 "update LINE_WEIGHTS from rankers.cc" % worst)
    print("as dumped                   ", fmt(metrics(qs, lambda f: 0)))
    print("line weights of rankers.cc  ", fmt(metrics(qs, line_scorer(LINE_WEIGHTS))))
    print("no line terms               ", fmt(metrics(qs, lambda f: f["base"])))
    if not search:
        return
    # Over the four line weights, from rankers.cc's.
    grid = [0, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0]
    w, bm = coordinate_ascent(qs, line_scorer, dict(LINE_WEIGHTS), list(LINE_WEIGHTS), grid)
    print("searched", w, fmt(bm))


if __name__ == "__main__":
    if "--lines" in sys.argv:
        lines_main(sys.argv[1], "--search" in sys.argv)
        sys.exit(0)
    qs = load(sys.argv[1])
    print("queries", len(qs))
    print("as dumped (order of the dump)", fmt(metrics(qs, lambda f: 0)))
    print("current formula             ", fmt(metrics(qs, current)))

    if "--search" in sys.argv:
        # coordinate ascent on MRR@10 (R@3 as tie-break) from the baseline-like start: file first, then subject
        keys = ["file", "mf", "text", "subj", "tri", "cc", "sem", "new"]
        grid = [0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
        for textkey, subjkey in [("text_bm25", "subject_bm25"), ("text_bm25_summary", "subject_bm25_summary")]:
            w = {"file": 1.0, "mf": 0.0, "text": 0.0, "subj": 1.0, "tri": 0.0, "cc": 0.0, "sem": 0.0, "new": 0.0,
                 "textkey": textkey, "subjkey": subjkey}
            print(textkey, "start", fmt(metrics(qs, make(w))))
            # subject stays on: the search starts from the baseline-like "file first, then subject"
            w, bm = coordinate_ascent(qs, make, w, keys, grid, allowed=lambda k, v: not (k == "subj" and v == 0))
            print(textkey, {k: w[k] for k in keys}, fmt(bm))
