-- 0011: a count of the changes to what a store keeps in memory of each row (its recall mirror: text, state, pin,
-- file refs; docs/storage.md, "Other connections"), so that a store can tell a commit by another connection that
-- changed memories from one that did not.
--
-- A store rebuilt its mirror whenever another connection committed (PRAGMA data_version), and the project's co-change
-- cache, written by a connection of its own after each new commit in the repository, is such a connection: the
-- first recall after a commit rebuilt every row (about 0.2 s at 10k memories). With this count, such a commit
-- changes nothing in memory. Every change to a row of `memories` but one that only records uses (use_count,
-- last_used_at) adds 1, whichever connection makes it; a store's own connection counts its own changes the same way
-- in a TEMP table (StoreSql::countOwnChanges), so the difference of the two moves only with other connections'
-- changes. File refs and vectors change only with their row (its insert, its update, its delete).
--
-- A column added to `memories` later must be added to the UPDATE OF list here and in StoreSql::countOwnChanges.
CREATE TABLE mirror_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n  INTEGER NOT NULL
);
INSERT INTO mirror_generation (id, n) VALUES (1, 0);

CREATE TRIGGER mirror_generation_insert AFTER INSERT ON memories
BEGIN
  UPDATE mirror_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER mirror_generation_delete AFTER DELETE ON memories
BEGIN
  UPDATE mirror_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER mirror_generation_update
AFTER UPDATE OF id, category, summary, details, topics, topics_text, source, session_id, created_at, updated_at,
                pinned, state, superseded_by, state_reason, content_hash ON memories
BEGIN
  UPDATE mirror_generation SET n = n + 1 WHERE id = 1;
END;
