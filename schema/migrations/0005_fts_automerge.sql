-- 0005: the full-text lanes merge their segments 16 at a time instead of FTS5's default 4. Same rows, same
-- answers (bm25 does not depend on how an index is split into segments).
--
-- Saves reach the lanes a batch at a time, each batch a new segment per lane. With automerge 4, FTS5 merged every
-- 4 segments of a level, rewriting a growing index over and over: near 10k memories that was most of a batch's
-- commit. With 16, a save near 10k costs about a third less (docs/performance.md, "Saves in the background"), and
-- a query reads a few more segments, which left recall's speed as it was at 10k and 100k.
INSERT INTO memories_fts(memories_fts, rank) VALUES ('automerge', 16);
INSERT INTO memories_fts_tri(memories_fts_tri, rank) VALUES ('automerge', 16);
