-- 0002: the repository-signals cache (docs/design.md §8). Owned by daemon/git (cochange_cache.cc); the store only
-- applies this script. Everything here is derived from git history and may be dropped at any time: the daemon
-- rebuilds it on the next refresh.
--
-- One graph per work tree: linked worktrees share this database (it lives in the common git dir) but each has
-- its own HEAD, and one shared graph would be rebuilt every time a different worktree asked.
CREATE TABLE cochange_graphs (
  id         INTEGER PRIMARY KEY,
  worktree   TEXT NOT NULL UNIQUE,   -- '' for the main work tree, else the linked worktree's git dir name
  head       TEXT NOT NULL,          -- 40-hex commit the counts were computed at
  settings   TEXT NOT NULL,          -- window, per-commit file cap and ignore globs; another value forces a rebuild
  updated_at TEXT NOT NULL
);

-- The window: the non-merge commits counted so far, oldest = lowest seq. Kept so that an incremental refresh can
-- evict exactly the commits that fall out of the window instead of rebuilding.
CREATE TABLE cochange_commits (
  graph_id  INTEGER NOT NULL REFERENCES cochange_graphs(id) ON DELETE CASCADE,
  seq       INTEGER NOT NULL,
  commit_id TEXT NOT NULL,
  counted   INTEGER NOT NULL CHECK (counted IN (0, 1)),  -- 0: skipped (too many files, or no usable parent)
  PRIMARY KEY (graph_id, seq)
) WITHOUT ROWID;

-- Per-file change counts. Paths are repository-relative (not project-root-relative) so one cache serves every
-- project root inside the repository; ids are per graph and stable across incremental refreshes.
CREATE TABLE cochange_files (
  graph_id INTEGER NOT NULL REFERENCES cochange_graphs(id) ON DELETE CASCADE,
  id       INTEGER NOT NULL,
  path     TEXT NOT NULL,
  changes  INTEGER NOT NULL CHECK (changes > 0),
  PRIMARY KEY (graph_id, id)
) WITHOUT ROWID;

-- Pair co-occurrence counts, stored once per unordered pair (a < b by file id). Pairs seen once are kept too:
-- an incremental refresh must know them to reach the count >= 2 that lookups require.
CREATE TABLE cochange_pairs (
  graph_id INTEGER NOT NULL REFERENCES cochange_graphs(id) ON DELETE CASCADE,
  a        INTEGER NOT NULL,
  b        INTEGER NOT NULL,
  count    INTEGER NOT NULL CHECK (count > 0),
  PRIMARY KEY (graph_id, a, b),
  CHECK (a < b)
) WITHOUT ROWID;
