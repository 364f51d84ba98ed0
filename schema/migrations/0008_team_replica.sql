-- 0008: a team scope's local replica (docs/team.md, "The replica"). memqd keeps the team server's memories in a
-- scope file of its own, fed from the server's journal in seq order; this row records the last journal seq applied,
-- written in the same transaction as the rows it brought, so a restart catches up from exactly there. A project or
-- global scope never writes it (it stays 0).
CREATE TABLE replica_state (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  applied_seq  INTEGER NOT NULL
);
INSERT INTO replica_state(id, applied_seq) VALUES (1, 0);
