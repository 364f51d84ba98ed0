-- 0009: a team replica remembers the time the server gave the last journal row it applied, beside its seq, so that
-- it can tell the server's journal still continues it (docs/team.md, "A server restored from a backup"). A journal
-- row's seq and commit time together identify it; a server restored to an older state, or a new database under the
-- same name, has no row at that seq or another row there. Empty until the replica applies a row (or for a replica
-- written before this version): then nothing is checked.
ALTER TABLE replica_state ADD COLUMN applied_at TEXT NOT NULL DEFAULT '';
