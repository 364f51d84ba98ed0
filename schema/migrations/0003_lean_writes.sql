-- 0003: fewer pages written per save (docs/performance.md, "where the save time goes"). Same rows, same meaning.
--
-- memory_embeddings becomes a rowid table. As WITHOUT ROWID its 1.5 KiB rows lived in an index b-tree, where a
-- row keeps at most ~1 KiB on the leaf: every vector spilled onto an overflow page and every few inserts split
-- leaves three at a time (about 7 pages written per save). A rowid table keeps two vectors per leaf and appends.
CREATE TABLE memory_embeddings_v3 (
  memory_pk INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
  model     TEXT NOT NULL,
  dim       INTEGER NOT NULL,
  vector    BLOB NOT NULL,     -- little-endian float32[dim]
  PRIMARY KEY (memory_pk, model)
);
INSERT INTO memory_embeddings_v3(memory_pk, model, dim, vector)
  SELECT memory_pk, model, dim, vector FROM memory_embeddings ORDER BY memory_pk, model;
DROP TABLE memory_embeddings;
ALTER TABLE memory_embeddings_v3 RENAME TO memory_embeddings;

-- memory_edges loses its dst_pk index. `similar` edges are stored in both directions, so a memory's edges are all
-- found by src_pk (the primary key); the index only added a second random page per edge to every save (8 edges,
-- 16 rows). A purge's cascade now scans the edges table, once, for `supersedes` edges pointing at the purged row.
DROP INDEX idx_memory_edges_dst;
