-- 0010: the full-text lanes merge a level's segments a little at every commit instead of all at once. Same rows,
-- same answers (bm25 does not depend on how an index is split into segments).
--
-- With automerge 16 (0005) and FTS5's default crisismerge, also 16, a level that reached 16 segments was merged whole
-- inside one commit: near 33k memories that merge of the trigram lane took 1.8 s, and a stream of saves waited for
-- it. With crisismerge 64, automerge's incremental merge of those 16 segments runs a step per commit, and a level is
-- merged whole only if it reaches 64 (docs/performance.md, "Where a save's time goes").
INSERT INTO memories_fts(memories_fts, rank) VALUES ('crisismerge', 64);
INSERT INTO memories_fts_tri(memories_fts_tri, rank) VALUES ('crisismerge', 64);
