-- 0001: the memory store. Every table of docs/design.md §1-§3 and the two full-text lanes of §6.
-- memories.pk is an explicit INTEGER PRIMARY KEY so the external-content FTS tables survive VACUUM;
-- `id` is the public UUID.

CREATE TABLE memories (
  pk            INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  category      TEXT CHECK (category IS NULL OR category IN ('pref', 'decision', 'gotcha', 'context')),
  summary       TEXT NOT NULL,
  details       TEXT NOT NULL DEFAULT '',
  topics        TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings, as given (de-duplicated)
  topics_text   TEXT NOT NULL DEFAULT '',     -- the same topics as plain words, for the FTS lanes
  source        TEXT NOT NULL CHECK (source IN ('user', 'agent')),
  session_id    TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  last_used_at  TEXT NOT NULL,
  use_count     INTEGER NOT NULL DEFAULT 0,
  pinned        INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
  state         TEXT NOT NULL DEFAULT 'active'
                CHECK (state IN ('active', 'hidden', 'superseded', 'rejected')),
  superseded_by TEXT,
  state_reason  TEXT,
  content_hash  TEXT NOT NULL UNIQUE
);
CREATE INDEX idx_memories_state ON memories(state, pinned DESC, last_used_at DESC);

CREATE TABLE memory_files (
  memory_pk INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
  path      TEXT NOT NULL,
  blob_id   TEXT,            -- git blob id of the file when the ref was recorded (staleness)
  PRIMARY KEY (memory_pk, path)
) WITHOUT ROWID;
CREATE INDEX idx_memory_files_path ON memory_files(path);

CREATE TABLE memory_edges (
  src_pk     INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
  dst_pk     INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
  kind       TEXT NOT NULL CHECK (kind IN ('similar', 'supersedes')),
  weight     REAL NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  PRIMARY KEY (src_pk, dst_pk, kind)
) WITHOUT ROWID;
CREATE INDEX idx_memory_edges_dst ON memory_edges(dst_pk);

CREATE TABLE memory_embeddings (
  memory_pk INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
  model     TEXT NOT NULL,
  dim       INTEGER NOT NULL,
  vector    BLOB NOT NULL,     -- little-endian float32[dim]
  PRIMARY KEY (memory_pk, model)
) WITHOUT ROWID;

-- The audit journal: append-only. UPDATE is allowed only for purge's scrub, which must first hold a grant for
-- that memory id in scrub_grants (inserted and removed inside the purge transaction); DELETE is never allowed.
CREATE TABLE memory_events (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  at        TEXT NOT NULL,
  memory_id TEXT NOT NULL,
  action    TEXT NOT NULL CHECK (action IN ('create', 'dedup', 'update', 'hide', 'restore', 'pin', 'unpin',
                                            'supersede', 'reject', 'unreject', 'attach', 'detach', 'purge',
                                            'import', 'blocked_save')),
  actor     TEXT NOT NULL,
  detail    TEXT NOT NULL DEFAULT '{}',
  scrubbed  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_memory_events_memory ON memory_events(memory_id, seq);

CREATE TABLE scrub_grants (memory_id TEXT PRIMARY KEY);

CREATE TRIGGER memory_events_no_delete BEFORE DELETE ON memory_events
BEGIN
  SELECT RAISE(ABORT, 'memory_events is append-only');
END;

CREATE TRIGGER memory_events_no_update BEFORE UPDATE ON memory_events
WHEN NOT (
  old.memory_id IN (SELECT memory_id FROM scrub_grants)
  AND new.seq = old.seq AND new.at = old.at AND new.memory_id = old.memory_id
  AND new.action = old.action AND new.actor = old.actor AND new.scrubbed = 1
)
BEGIN
  SELECT RAISE(ABORT, 'memory_events is append-only');
END;

-- Rejected content, keyed by content hash; outlives the memory row (even a purge).
CREATE TABLE tombstones (
  content_hash TEXT PRIMARY KEY,
  memory_id    TEXT NOT NULL,
  reason       TEXT NOT NULL,
  actor        TEXT NOT NULL,
  at           TEXT NOT NULL
);

CREATE VIRTUAL TABLE memories_fts USING fts5(
  summary, details, topics_text,
  content = 'memories', content_rowid = 'pk',
  tokenize = 'unicode61 remove_diacritics 2');

-- SQLite 3.40's trigram tokenizer has no remove_diacritics option.
CREATE VIRTUAL TABLE memories_fts_tri USING fts5(
  summary, details, topics_text,
  content = 'memories', content_rowid = 'pk',
  tokenize = 'trigram case_sensitive 0');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
BEGIN
  INSERT INTO memories_fts(rowid, summary, details, topics_text)
    VALUES (new.pk, new.summary, new.details, new.topics_text);
  INSERT INTO memories_fts_tri(rowid, summary, details, topics_text)
    VALUES (new.pk, new.summary, new.details, new.topics_text);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, summary, details, topics_text)
    VALUES ('delete', old.pk, old.summary, old.details, old.topics_text);
  INSERT INTO memories_fts_tri(memories_fts_tri, rowid, summary, details, topics_text)
    VALUES ('delete', old.pk, old.summary, old.details, old.topics_text);
END;

-- Re-index only when indexed text changes: usage bumps, pins and state changes never touch the FTS tables.
CREATE TRIGGER memories_fts_update AFTER UPDATE OF summary, details, topics_text ON memories
WHEN old.summary IS NOT new.summary OR old.details IS NOT new.details OR old.topics_text IS NOT new.topics_text
BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, summary, details, topics_text)
    VALUES ('delete', old.pk, old.summary, old.details, old.topics_text);
  INSERT INTO memories_fts_tri(memories_fts_tri, rowid, summary, details, topics_text)
    VALUES ('delete', old.pk, old.summary, old.details, old.topics_text);
  INSERT INTO memories_fts(rowid, summary, details, topics_text)
    VALUES (new.pk, new.summary, new.details, new.topics_text);
  INSERT INTO memories_fts_tri(rowid, summary, details, topics_text)
    VALUES (new.pk, new.summary, new.details, new.topics_text);
END;
