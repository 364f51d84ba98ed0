-- 0007: a file ref may name lines of the file, in one version of it (docs/anchors.md), and memq keeps the versions
-- the repository's object database does not have, so that an anchor can always be carried to a later version.

-- The anchored lines in their normalised text form ("40-60,72"), and the git blob id of the version they are in.
-- Both NULL for a plain ref (the whole file); both set for an anchored one. blob_id, the file's blob id when the
-- ref was recorded, keeps its meaning (staleness).
ALTER TABLE memory_files ADD COLUMN anchor_lines TEXT;
ALTER TABLE memory_files ADD COLUMN anchor_blob TEXT;

-- Partial: plain refs, most of them, cost saves nothing here. It serves the clean-up triggers below.
CREATE INDEX idx_memory_files_anchor_blob ON memory_files(anchor_blob) WHERE anchor_blob IS NOT NULL;

-- File versions memq keeps itself, one row per content (keyed by its git blob id, so two anchors to the same
-- uncommitted content share one copy). A rowid table: contents are large and would spill out of a WITHOUT ROWID
-- table's leaves.
CREATE TABLE anchor_versions (
  blob_id TEXT PRIMARY KEY,
  content BLOB NOT NULL
);

-- A kept version goes when the last ref anchored in it goes: deleted (detach, update of files, purge through the
-- memories' ON DELETE CASCADE, which fires these triggers too) or moved to another version (attach re-anchoring).
CREATE TRIGGER memory_files_anchor_release AFTER DELETE ON memory_files
  WHEN old.anchor_blob IS NOT NULL
BEGIN
  DELETE FROM anchor_versions WHERE blob_id = old.anchor_blob
    AND NOT EXISTS (SELECT 1 FROM memory_files WHERE anchor_blob = old.anchor_blob);
END;

CREATE TRIGGER memory_files_anchor_move AFTER UPDATE OF anchor_blob ON memory_files
  WHEN old.anchor_blob IS NOT NULL AND old.anchor_blob IS NOT new.anchor_blob
BEGIN
  DELETE FROM anchor_versions WHERE blob_id = old.anchor_blob
    AND NOT EXISTS (SELECT 1 FROM memory_files WHERE anchor_blob = old.anchor_blob);
END;
