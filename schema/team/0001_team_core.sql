-- The team scope's server schema (PostgreSQL 15), version 1: memories shared by everyone on a repository, the
-- tombstones of rejected content, and the append-only audit journal, in the schema memq_team. Every write goes
-- through the SECURITY DEFINER functions memq_save and memq_set_state, which apply the correction model of
-- docs/design.md §2 and append one audit row per change or blocked save (§3). docs/team.md describes the guarantees.
-- Run by the migration runner (schema/migration_runner.h) in one transaction, as a role with CREATEROLE (the group
-- roles are created here when missing) that then owns every object; the functions run with its rights.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memq_team_reader') THEN
    CREATE ROLE memq_team_reader NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memq_team_writer') THEN
    CREATE ROLE memq_team_writer NOLOGIN;
  END IF;
  IF NOT pg_has_role('memq_team_writer', 'memq_team_reader', 'MEMBER') THEN
    GRANT memq_team_reader TO memq_team_writer;
  END IF;
END
$$;

-- Nobody but the owner creates or replaces anything in the schema the functions resolve names in.
REVOKE ALL ON SCHEMA memq_team FROM PUBLIC;
GRANT USAGE ON SCHEMA memq_team TO memq_team_reader;

CREATE TABLE memq_team.memories (
  id            text PRIMARY KEY
                CHECK (id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
  summary       text NOT NULL CHECK (char_length(summary) BETWEEN 1 AND 200),
  details       text NOT NULL DEFAULT '' CHECK (char_length(details) <= 2000),
  category      text CHECK (category IN ('pref', 'decision', 'gotcha', 'context')),
  topics        jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(topics) = 'array'),
  -- As the protocol writes a file: a path string, or {"path", "lines": [[first, last], ...], "blob"}.
  files         jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(files) = 'array'),
  -- docs/design.md §1.2, computed by the client; one row per hash is what makes a re-save deduplicate.
  content_hash  text NOT NULL UNIQUE CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  state         text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'hidden', 'superseded', 'rejected')),
  superseded_by text REFERENCES memq_team.memories (id),
  state_reason  text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  created_by    name NOT NULL DEFAULT session_user,
  CHECK ((state = 'superseded') = (superseded_by IS NOT NULL))
);

-- A rejected content hash: outlives its memory's row, so the same text is refused again.
CREATE TABLE memq_team.tombstones (
  content_hash text PRIMARY KEY CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  memory_id    text NOT NULL,
  reason       text NOT NULL,
  rejected_by  name NOT NULL DEFAULT session_user,
  rejected_at  timestamptz NOT NULL DEFAULT now()
);

-- The journal. seq is allocated under the write lock the functions take (memq_team.lock_writes), so seq order is
-- commit order: a reader that has seen seq N never sees a smaller one appear later.
CREATE TABLE memq_team.audit (
  seq       bigserial PRIMARY KEY,
  at        timestamptz NOT NULL DEFAULT now(),
  actor     name NOT NULL DEFAULT session_user,
  action    text NOT NULL CHECK (action IN ('create', 'hide', 'restore', 'supersede', 'reject', 'unreject',
                                            'blocked_save')),
  memory_id text NOT NULL,
  detail    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object')
);
CREATE INDEX audit_memory ON memq_team.audit (memory_id, seq);

-- The actor and time are the server's: whatever an INSERT names, the row records the authenticated role
-- (session_user, which SET ROLE and SECURITY DEFINER leave unchanged) and the transaction's time.
CREATE FUNCTION memq_team.audit_stamp() RETURNS trigger LANGUAGE plpgsql
SET search_path = memq_team, pg_temp AS $$
BEGIN
  NEW.actor := session_user;
  NEW.at := now();
  RETURN NEW;
END
$$;
CREATE TRIGGER audit_stamp BEFORE INSERT ON memq_team.audit FOR EACH ROW EXECUTE FUNCTION memq_team.audit_stamp();

-- Append-only, for every role including the owner: UPDATE, DELETE and TRUNCATE raise.
CREATE FUNCTION memq_team.audit_append_only() RETURNS trigger LANGUAGE plpgsql
SET search_path = memq_team, pg_temp AS $$
BEGIN
  RAISE EXCEPTION 'the audit journal is append-only: % is not allowed', TG_OP USING ERRCODE = 'MQ004';
END
$$;
CREATE TRIGGER audit_no_update_delete BEFORE UPDATE OR DELETE ON memq_team.audit
  FOR EACH ROW EXECUTE FUNCTION memq_team.audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON memq_team.audit
  FOR EACH STATEMENT EXECUTE FUNCTION memq_team.audit_append_only();

-- Errors the functions raise, by SQLSTATE (team_client.cc maps them to memq's codes; COLUMN names the field):
--   MQ001 no such memory (NotFound)        MQ002 the correction model forbids it (Conflict)
--   MQ003 a parameter is invalid (InvalidParams)   MQ004 the journal is append-only

-- One writer at a time: each write function takes this transaction-scoped lock first, so journal rows are numbered
-- in the order their transactions commit.
CREATE FUNCTION memq_team.lock_writes() RETURNS void LANGUAGE sql
SET search_path = memq_team, pg_temp AS $$
  SELECT pg_advisory_xact_lock(7236311813291876913);  -- an arbitrary constant: "memq_team" writes
$$;

CREATE FUNCTION memq_team.append_event(p_action text, p_memory_id text, p_detail jsonb) RETURNS bigint
LANGUAGE plpgsql SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_seq bigint;
BEGIN
  INSERT INTO memq_team.audit (action, memory_id, detail) VALUES (p_action, p_memory_id, p_detail)
    RETURNING seq INTO v_seq;
  PERFORM pg_notify('memq_team', v_seq::text);  -- delivered when the transaction commits
  RETURN v_seq;
END
$$;

-- docs/design.md §1.2's hash, for text that is all ASCII (where the normalisation is exactly: runs of
-- \t \n \v \f \r and space become one space, the ends are trimmed, A-Z is lowercased); NULL for any other text,
-- whose Unicode white space and case mapping the server does not reproduce.
CREATE FUNCTION memq_team.ascii_content_hash(p_summary text, p_details text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_space text := '[' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || ' ]+';
  v_norm text[];
  v_part text;
BEGIN
  FOREACH v_part IN ARRAY ARRAY[p_summary, p_details] LOOP
    IF octet_length(v_part) <> char_length(v_part) THEN
      RETURN NULL;
    END IF;
    v_norm := v_norm || lower(btrim(regexp_replace(v_part, v_space, ' ', 'g'), ' ') COLLATE "C");
  END LOOP;
  RETURN encode(sha256(convert_to(v_norm[1] || chr(10) || v_norm[2], 'UTF8')), 'hex');
END
$$;

-- A file as the protocol writes it: a path (1 to 4095 bytes, PATH_MAX less its NUL), or {"path", "lines", "blob"?}
-- with 1 to 64 ranges [first, last], 1 <= first <= last, and a 40-hex-digit git blob id.
CREATE FUNCTION memq_team.valid_file(p_file jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = memq_team, pg_temp AS $$
  SELECT CASE jsonb_typeof(p_file)
    WHEN 'string' THEN octet_length(p_file #>> '{}') BETWEEN 1 AND 4095
    WHEN 'object' THEN
      jsonb_typeof(p_file -> 'path') = 'string' AND octet_length(p_file ->> 'path') BETWEEN 1 AND 4095
      AND (SELECT count(*) FROM jsonb_object_keys(p_file) k WHERE k NOT IN ('path', 'lines', 'blob')) = 0
      AND (p_file -> 'blob' IS NULL OR (jsonb_typeof(p_file -> 'blob') = 'string'
                                        AND (p_file ->> 'blob') ~ '^[0-9a-f]{40}$'))
      AND jsonb_typeof(p_file -> 'lines') = 'array'
      AND jsonb_array_length(p_file -> 'lines') BETWEEN 1 AND 64
      AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(p_file -> 'lines') r
         WHERE jsonb_typeof(r) <> 'array' OR jsonb_array_length(r) <> 2
            OR jsonb_typeof(r -> 0) <> 'number' OR jsonb_typeof(r -> 1) <> 'number'
            OR (r ->> 0) !~ '^[1-9][0-9]{0,9}$' OR (r ->> 1) !~ '^[1-9][0-9]{0,9}$'
            OR (r ->> 0)::bigint > (r ->> 1)::bigint OR (r ->> 1)::bigint > 4294967295)
    ELSE false
  END
$$;

-- The shape of a save's text fields; raises MQ003 naming the field.
CREATE FUNCTION memq_team.check_save(p_summary text, p_details text, p_category text, p_topics jsonb,
                                     p_files jsonb, p_content_hash text) RETURNS void
LANGUAGE plpgsql SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_file jsonb;
  v_hash text;
BEGIN
  IF p_summary IS NULL OR btrim(p_summary) = '' OR char_length(p_summary) > 200 THEN
    RAISE EXCEPTION 'summary must be 1 to 200 characters' USING ERRCODE = 'MQ003', COLUMN = 'summary';
  END IF;
  IF p_details IS NULL OR char_length(p_details) > 2000 THEN
    RAISE EXCEPTION 'details must be at most 2000 characters' USING ERRCODE = 'MQ003', COLUMN = 'details';
  END IF;
  IF p_category IS NOT NULL AND p_category NOT IN ('pref', 'decision', 'gotcha', 'context') THEN
    RAISE EXCEPTION 'category must be one of pref, decision, gotcha, context' USING ERRCODE = 'MQ003',
      COLUMN = 'category';
  END IF;
  IF p_topics IS NULL OR jsonb_typeof(p_topics) <> 'array' OR jsonb_array_length(p_topics) > 8
     OR EXISTS (SELECT 1 FROM jsonb_array_elements(p_topics) t
                 WHERE jsonb_typeof(t) <> 'string' OR char_length(t #>> '{}') NOT BETWEEN 1 AND 32) THEN
    RAISE EXCEPTION 'topics must be an array of at most 8 strings of 1 to 32 characters' USING ERRCODE = 'MQ003',
      COLUMN = 'topics';
  END IF;
  IF p_files IS NULL OR jsonb_typeof(p_files) <> 'array' OR jsonb_array_length(p_files) > 16 THEN
    RAISE EXCEPTION 'files must be an array of at most 16 entries' USING ERRCODE = 'MQ003', COLUMN = 'files';
  END IF;
  FOR v_file IN SELECT f FROM jsonb_array_elements(p_files) f LOOP
    IF NOT memq_team.valid_file(v_file) THEN
      RAISE EXCEPTION 'each file is a path of 1 to 4095 bytes, or {path, lines: at most 64 [first, last] ranges, '
                      'blob: 40 hex digits}' USING ERRCODE = 'MQ003', COLUMN = 'files';
    END IF;
  END LOOP;
  IF p_content_hash IS NULL OR p_content_hash !~ '^[0-9a-f]{64}$' THEN
    RAISE EXCEPTION 'content_hash must be 64 lowercase hex digits' USING ERRCODE = 'MQ003', COLUMN = 'content_hash';
  END IF;
  v_hash := memq_team.ascii_content_hash(p_summary, p_details);
  IF v_hash IS NOT NULL AND v_hash <> p_content_hash THEN
    RAISE EXCEPTION 'content_hash does not match the text' USING ERRCODE = 'MQ003', COLUMN = 'content_hash';
  END IF;
END
$$;

-- A save (docs/design.md §2): the status is created, deduped (an active memory has this content: its id),
-- exists_hidden / exists_superseded (reported, never revived; superseded_by names the replacement) or rejected
-- (a tombstone: nothing is written but one blocked_save row; reason is the rejection's). seq is the journal row
-- written, NULL when nothing was.
CREATE FUNCTION memq_team.memq_save(p_summary text, p_details text, p_category text, p_topics jsonb,
                                    p_files jsonb, p_content_hash text,
                                    OUT status text, OUT id text, OUT superseded_by text, OUT reason text,
                                    OUT seq bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_row memq_team.memories%ROWTYPE;
  v_tomb memq_team.tombstones%ROWTYPE;
BEGIN
  PERFORM memq_team.check_save(p_summary, p_details, p_category, p_topics, p_files, p_content_hash);
  PERFORM memq_team.lock_writes();
  SELECT * INTO v_tomb FROM memq_team.tombstones t WHERE t.content_hash = p_content_hash;
  IF FOUND THEN
    status := 'rejected';
    id := v_tomb.memory_id;
    reason := v_tomb.reason;
    seq := memq_team.append_event('blocked_save', v_tomb.memory_id,
                                  jsonb_build_object('content_hash', p_content_hash, 'reason', v_tomb.reason));
    RETURN;
  END IF;
  SELECT * INTO v_row FROM memq_team.memories m WHERE m.content_hash = p_content_hash;
  IF FOUND THEN
    id := v_row.id;
    superseded_by := v_row.superseded_by;
    status := CASE v_row.state WHEN 'active' THEN 'deduped' WHEN 'hidden' THEN 'exists_hidden'
                               WHEN 'superseded' THEN 'exists_superseded' ELSE 'rejected' END;
    IF v_row.state = 'rejected' THEN
      reason := v_row.state_reason;
    END IF;
    RETURN;
  END IF;
  INSERT INTO memq_team.memories (id, summary, details, category, topics, files, content_hash)
    VALUES (gen_random_uuid()::text, p_summary, p_details, p_category, p_topics, p_files, p_content_hash)
    RETURNING memories.id INTO id;
  status := 'created';
  seq := memq_team.append_event('create', id, jsonb_build_object('content_hash', p_content_hash));
END
$$;

-- A state change: p_action is hide, restore, supersede (p_superseded_by names the active replacement), reject
-- (p_reason required: writes the tombstone) or unreject (takes the tombstone back). Returns the journal row written,
-- NULL for a change that changes nothing (hiding a hidden memory). Raises MQ001, MQ002 or MQ003 otherwise.
CREATE FUNCTION memq_team.memq_set_state(p_id text, p_action text, p_reason text, p_superseded_by text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_row memq_team.memories%ROWTYPE;
  v_by memq_team.memories%ROWTYPE;
  v_to text;
  v_detail jsonb;
BEGIN
  IF p_action IS NULL OR p_action NOT IN ('hide', 'restore', 'supersede', 'reject', 'unreject') THEN
    RAISE EXCEPTION 'action must be one of hide, restore, supersede, reject, unreject' USING ERRCODE = 'MQ003',
      COLUMN = 'action';
  END IF;
  IF p_action = 'reject' AND (p_reason IS NULL OR btrim(p_reason) = '') THEN
    RAISE EXCEPTION 'reason is required to reject a memory' USING ERRCODE = 'MQ003', COLUMN = 'reason';
  END IF;
  IF p_action = 'supersede' AND (p_superseded_by IS NULL OR p_superseded_by = p_id) THEN
    RAISE EXCEPTION 'a memory is superseded by another one' USING ERRCODE = 'MQ003', COLUMN = 'by';
  END IF;
  PERFORM memq_team.lock_writes();
  SELECT * INTO v_row FROM memq_team.memories m WHERE m.id = p_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no memory with id % in the team scope', p_id USING ERRCODE = 'MQ001', COLUMN = 'id';
  END IF;
  v_to := CASE p_action WHEN 'hide' THEN 'hidden' WHEN 'supersede' THEN 'superseded' WHEN 'reject' THEN 'rejected'
                        ELSE 'active' END;
  IF p_action = 'supersede' THEN
    SELECT * INTO v_by FROM memq_team.memories m WHERE m.id = p_superseded_by;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'replacement memory % not found in the team scope', p_superseded_by USING ERRCODE = 'MQ001',
        COLUMN = 'by';
    ELSIF v_by.state <> 'active' THEN
      RAISE EXCEPTION 'replacement % is %; it must be active', p_superseded_by, v_by.state USING ERRCODE = 'MQ002',
        COLUMN = 'by';
    END IF;
    IF v_row.state = 'superseded' AND v_row.superseded_by = p_superseded_by THEN
      RETURN NULL;
    END IF;
  ELSIF v_row.state = v_to AND p_action <> 'unreject' THEN
    RETURN NULL;  -- idempotent: no change, no journal row
  END IF;
  IF (p_action IN ('hide', 'supersede') AND v_row.state NOT IN ('active', 'hidden'))
     OR (p_action = 'restore' AND v_row.state NOT IN ('hidden', 'superseded'))
     OR (p_action = 'unreject' AND v_row.state <> 'rejected') THEN
    RAISE EXCEPTION 'memory % is %; cannot % it', p_id, v_row.state, p_action USING ERRCODE = 'MQ002',
      COLUMN = 'id';
  END IF;
  UPDATE memq_team.memories m
     SET state = v_to,
         superseded_by = CASE WHEN v_to = 'superseded' THEN p_superseded_by END,
         state_reason = CASE WHEN v_to = 'active' THEN NULL ELSE p_reason END,
         updated_at = now()
   WHERE m.id = p_id;
  IF v_to = 'rejected' THEN
    INSERT INTO memq_team.tombstones (content_hash, memory_id, reason) VALUES (v_row.content_hash, p_id, p_reason)
      ON CONFLICT (content_hash) DO UPDATE SET memory_id = EXCLUDED.memory_id, reason = EXCLUDED.reason,
        rejected_by = session_user, rejected_at = now();
  ELSIF v_row.state = 'rejected' THEN
    DELETE FROM memq_team.tombstones t WHERE t.content_hash = v_row.content_hash;
  END IF;
  v_detail := jsonb_build_object('from', v_row.state, 'to', v_to);
  IF p_reason IS NOT NULL THEN
    v_detail := v_detail || jsonb_build_object('reason', p_reason);
  END IF;
  IF v_to = 'superseded' THEN
    v_detail := v_detail || jsonb_build_object('superseded_by', p_superseded_by);
  ELSIF v_row.superseded_by IS NOT NULL THEN
    v_detail := v_detail || jsonb_build_object('superseded_by', v_row.superseded_by);
  END IF;
  RETURN memq_team.append_event(p_action, p_id, v_detail);
END
$$;

-- Privileges: readers SELECT, writers also EXECUTE the two write functions; no role but the owner holds any other
-- privilege, and none at all on the helpers (functions are executable by PUBLIC unless revoked).
REVOKE ALL ON ALL TABLES IN SCHEMA memq_team FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA memq_team FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA memq_team FROM PUBLIC;
GRANT SELECT ON memq_team.memories, memq_team.tombstones, memq_team.audit, memq_team.schema_version
  TO memq_team_reader;
GRANT EXECUTE ON FUNCTION
  memq_team.memq_save(text, text, text, jsonb, jsonb, text),
  memq_team.memq_set_state(text, text, text, text)
  TO memq_team_writer;
