-- 0006: a `similar` edge is stored once, as (newer or higher pk, lower pk), and read from both ends. Same edges,
-- same weights, same meaning: the view similar_edges lists each in both directions, as 0001 to 0005 stored them.
--
-- Why: with both directions stored, every save wrote 8 rows keyed by an older memory (src_pk = the neighbour), each
-- onto a random page of the table. Near 10k memories a batch of 256 saves dirtied about 60% of the table's pages,
-- about 5 MiB written to the WAL per commit. Stored once, a save's edge rows are keyed by its own (highest) pk and
-- append; what is random is one small entry per edge in idx_memory_edges_dst, an index a third of the size
-- (docs/performance.md, "Saves at 10k: edges stored once").

-- A pair stored in one direction only (never written by memq, but possible in a hand-edited file) keeps its edge.
-- An edge to a memory that is gone (possible only if the file was edited with foreign keys off) is dropped, not
-- turned around: its insert would fail the foreign key and with it the whole upgrade.
INSERT OR IGNORE INTO memory_edges(src_pk, dst_pk, kind, weight, created_at)
  SELECT dst_pk, src_pk, kind, weight, created_at FROM memory_edges e WHERE kind = 'similar' AND src_pk < dst_pk
    AND EXISTS (SELECT 1 FROM memories WHERE pk = e.src_pk) AND EXISTS (SELECT 1 FROM memories WHERE pk = e.dst_pk);
DELETE FROM memory_edges WHERE kind = 'similar' AND src_pk < dst_pk;

CREATE INDEX idx_memory_edges_dst ON memory_edges(dst_pk);

-- Every similar edge in both directions: (a, b) and (b, a) with the same weight and time.
CREATE VIEW similar_edges(src_pk, dst_pk, weight, created_at) AS
  SELECT src_pk, dst_pk, weight, created_at FROM memory_edges WHERE kind = 'similar'
  UNION ALL
  SELECT dst_pk, src_pk, weight, created_at FROM memory_edges WHERE kind = 'similar';
