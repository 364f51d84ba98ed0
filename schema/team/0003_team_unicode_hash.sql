-- The team scope's server schema, version 3: the server recomputes the content hash of every save, not only of
-- ASCII text, so no writer can slip rejected text of any script past its tombstone with a made-up hash.
--
-- docs/design.md §1.2's normalisation is JavaScript's: runs of white space as `\s` matches it (below) become one
-- space, the ends are trimmed, and the text is lowercased with Unicode's full case mapping, final sigma included.
-- ICU's root-locale lowercasing (the collation "und-x-icu") is that mapping: memq's tables and Debian 12's ICU 72
-- give the same normalised text for every code point from U+0001 to U+10FFFF, and the mappings that are not one
-- letter to one letter are tested (tests/team: TeamHostileTest.TheServerHashesTextOfAnyScriptAsTheClientDoes).
-- Needs a UTF8 database on a server built with ICU (Debian's and most distributions' are).

DO $$
BEGIN
  IF current_setting('server_encoding') <> 'UTF8' THEN
    RAISE EXCEPTION 'the team database must be UTF8 (it is %): create it with ENCODING ''UTF8''',
      current_setting('server_encoding');
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') THEN
    RAISE EXCEPTION 'the team server needs PostgreSQL built with ICU (collation "und-x-icu" is missing)';
  END IF;
END
$$;

CREATE FUNCTION memq_team.content_hash(p_summary text, p_details text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = memq_team, pg_temp AS $$
DECLARE
  -- JavaScript's \s: TAB, LF, VT, FF, CR, space, NBSP, OGHAM SPACE MARK, EN QUAD..HAIR SPACE, LINE and PARAGRAPH
  -- SEPARATOR, NARROW NBSP, MEDIUM MATHEMATICAL SPACE, IDEOGRAPHIC SPACE, BOM.
  v_space text := '[' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || ' ' || chr(160) || chr(5760) ||
                  chr(8192) || '-' || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) ||
                  chr(65279) || ']+';
  v_norm text[];
  v_part text;
BEGIN
  FOREACH v_part IN ARRAY ARRAY[p_summary, p_details] LOOP
    v_norm := v_norm || lower(btrim(regexp_replace(v_part, v_space, ' ', 'g'), ' ') COLLATE "und-x-icu");
  END LOOP;
  RETURN encode(sha256(convert_to(v_norm[1] || chr(10) || v_norm[2], 'UTF8')), 'hex');
END
$$;
REVOKE ALL ON FUNCTION memq_team.content_hash(text, text) FROM PUBLIC;

-- As version 1's, with the hash checked for all text.
CREATE OR REPLACE FUNCTION memq_team.check_save(p_summary text, p_details text, p_category text, p_topics jsonb,
                                                p_files jsonb, p_content_hash text) RETURNS void
LANGUAGE plpgsql SET search_path = memq_team, pg_temp AS $$
DECLARE
  v_file jsonb;
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
  IF memq_team.content_hash(p_summary, p_details) <> p_content_hash THEN
    RAISE EXCEPTION 'content_hash does not match the text' USING ERRCODE = 'MQ003', COLUMN = 'content_hash';
  END IF;
END
$$;

-- Version 1's ASCII-only hash has no caller left.
DROP FUNCTION memq_team.ascii_content_hash(text, text);
