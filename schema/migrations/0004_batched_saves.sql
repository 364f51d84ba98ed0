-- 0004: saves in batches (docs/architecture.md, "Saves in batches"). Same rows, same meaning.
--
-- A new row's full-text entries are written by the store, not by an insert trigger: FTS5 writes a new segment for
-- its pending rows at every statement savepoint after them, so with a trigger every save of a batch cost each lane
-- a segment of its own. The store writes a batch's rows into both lanes together, just before the commit. The
-- delete and update triggers stay: those rows are always indexed already when they change.
DROP TRIGGER memories_fts_insert;

-- The last batch of saves whose transaction committed (the `<database>-saves` journal names the batch it holds:
-- a newer one is replayed at open, an older or equal one was already applied).
CREATE TABLE save_batches (
  id            INTEGER PRIMARY KEY CHECK (id = 1),
  applied_batch INTEGER NOT NULL
);
INSERT INTO save_batches(id, applied_batch) VALUES (1, 0);
