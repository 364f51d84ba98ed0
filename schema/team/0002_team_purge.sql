-- The team scope's server schema, version 2: purge, the one hard delete (docs/design.md §2, docs/team.md), and the
-- group role allowed to make it. A purge deletes a memory's row; its tombstone (if it was rejected) stays, so its
-- text is still refused, and its journal rows stay (they hold no text: ids, hashes, states and reasons). It is
-- journalled as a `purge` row like every change, and notified, so each memqd drops the row from its replica.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memq_team_maintainer') THEN
    CREATE ROLE memq_team_maintainer NOLOGIN;
  END IF;
  IF NOT pg_has_role('memq_team_maintainer', 'memq_team_writer', 'MEMBER') THEN
    GRANT memq_team_writer TO memq_team_maintainer;
  END IF;
END
$$;

ALTER TABLE memq_team.audit DROP CONSTRAINT audit_action_check;
ALTER TABLE memq_team.audit ADD CONSTRAINT audit_action_check
  CHECK (action IN ('create', 'hide', 'restore', 'supersede', 'reject', 'unreject', 'blocked_save', 'purge'));

-- Deletes memory p_id for good and returns the journal row written. MQ001 when there is no such memory; MQ002 while
-- another memory is superseded by it (restore that one first: its pointer would dangle).
CREATE FUNCTION memq_team.memq_purge(p_id text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_row memq_team.memories%ROWTYPE;
  v_dependent text;
BEGIN
  PERFORM memq_team.lock_writes();
  SELECT * INTO v_row FROM memq_team.memories m WHERE m.id = p_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no memory with id % in the team scope', p_id USING ERRCODE = 'MQ001', COLUMN = 'id';
  END IF;
  SELECT m.id INTO v_dependent FROM memq_team.memories m WHERE m.superseded_by = p_id LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'memory % is superseded by %; restore it before purging %', v_dependent, p_id, p_id
      USING ERRCODE = 'MQ002', COLUMN = 'id';
  END IF;
  DELETE FROM memq_team.memories m WHERE m.id = p_id;
  RETURN memq_team.append_event('purge', p_id,
                                jsonb_build_object('from', v_row.state, 'content_hash', v_row.content_hash,
                                                   'tombstone_kept', v_row.state = 'rejected'));
END
$$;

REVOKE ALL ON FUNCTION memq_team.memq_purge(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memq_team.memq_purge(text) TO memq_team_maintainer;
