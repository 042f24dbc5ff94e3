-- 0001_init for PostgreSQL: the schema of sqlite/0001_init.sql in PostgreSQL's dialect.
-- docs/sql.md documents every table, column and view; change both dialects and the doc
-- together. The types are SQLite's, spelled for PostgreSQL: INTEGER is bigint, REAL double
-- precision, TEXT text. Timestamps stay RFC 3339 UTC text ('2025-06-01T12:00:00.000Z') and
-- JSON stays text, so that every query of docs/sql.md reads the same values on both.
--
-- Differences the dialect forces: ids are identity columns (SQLite's INTEGER PRIMARY KEY
-- allocates the same way), there is no STRICT or WITHOUT ROWID, and views turn comparisons
-- into integers explicitly (SQLite's are 0 and 1 already). The file opens with the
-- SQLite functions that the schema's checks and the documented queries use, written for
-- PostgreSQL (docs/sql.md, "PostgreSQL"); store/sqlfuncs_test.go compares them with
-- SQLite's own on the same inputs.


-- json_valid(doc): whether doc is well-formed JSON (NULL for NULL).
CREATE FUNCTION json_valid(doc text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF doc IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM doc::json;
    RETURN true;
EXCEPTION WHEN data_exception THEN
    RETURN false;
END
$$;

-- json_extract(doc, path): the value at path ('$', '$.key', '$."key"', '$[0]', chained),
-- as SQLite gives it but always as text: strings unquoted, true and false as 1 and 0,
-- null as NULL, numbers, arrays and objects as their JSON text. NULL when path leads
-- nowhere; an error for malformed JSON or a path outside that grammar.
CREATE FUNCTION json_extract(doc text, path text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    keys text[] := '{}';
    rest text;
    m text[];
    v json;
BEGIN
    IF doc IS NULL OR path IS NULL THEN
        RETURN NULL;
    END IF;
    IF left(path, 1) <> '$' THEN
        RAISE EXCEPTION 'bad JSON path: %', path USING ERRCODE = 'invalid_parameter_value';
    END IF;
    rest := substr(path, 2);
    WHILE rest <> '' LOOP
        m := regexp_match(rest, '^\.(?:"([^"]*)"|([^.\[]+))');
        IF m IS NOT NULL THEN
            keys := keys || coalesce(m[1], m[2]);
            rest := substr(rest, length(coalesce('"' || m[1] || '"', m[2])) + 2);
            CONTINUE;
        END IF;
        m := regexp_match(rest, '^\[(\d+)\]');
        IF m IS NOT NULL THEN
            keys := keys || m[1];
            rest := substr(rest, length(m[1]) + 3);
            CONTINUE;
        END IF;
        RAISE EXCEPTION 'bad JSON path: %', path USING ERRCODE = 'invalid_parameter_value';
    END LOOP;
    v := doc::json #> keys;
    RETURN CASE json_typeof(v)
        WHEN 'string' THEN v #>> '{}'
        WHEN 'boolean' THEN CASE v::text WHEN 'true' THEN '1' ELSE '0' END
        WHEN 'null' THEN NULL
        ELSE v::text
    END;
END
$$;

-- json_each(doc): one row per element of a JSON array or member of an object, with
-- SQLite's key (the index, as text, for arrays), value (as json_extract gives it) and type
-- ('integer', 'real', 'text', 'true', 'false', 'null', 'array', 'object'); a scalar is
-- one row with a NULL key.
CREATE FUNCTION json_each(doc text) RETURNS TABLE (key text, value text, type text)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ROWS 20 AS $$
#variable_conflict use_column
DECLARE
    j json := doc::json;
BEGIN
    RETURN QUERY
    WITH e(k, v) AS (
        SELECT (a.n - 1)::text, a.v FROM json_array_elements(CASE json_typeof(j) WHEN 'array' THEN j ELSE '[]' END)
            WITH ORDINALITY AS a(v, n)
        UNION ALL
        SELECT o.key, o.value FROM json_each(CASE json_typeof(j) WHEN 'object' THEN j ELSE '{}' END) AS o
        UNION ALL
        SELECT NULL, j WHERE j IS NOT NULL AND json_typeof(j) NOT IN ('array', 'object')
    )
    SELECT e.k,
           CASE json_typeof(e.v)
               WHEN 'string' THEN e.v #>> '{}'
               WHEN 'boolean' THEN CASE e.v::text WHEN 'true' THEN '1' ELSE '0' END
               WHEN 'null' THEN NULL
               ELSE e.v::text
           END,
           CASE json_typeof(e.v)
               WHEN 'string' THEN 'text'
               WHEN 'number' THEN CASE WHEN e.v::text ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END
               WHEN 'boolean' THEN e.v::text
               ELSE json_typeof(e.v)
           END
    FROM e;
END
$$;

-- round(x, digits) of a double precision: PostgreSQL rounds numerics only.
CREATE FUNCTION round(x double precision, digits integer) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT round(x::numeric, digits)::double precision
$$;

-- strftime(format, time, modifier...): SQLite's date and time function on the timestamps
-- of this schema. time is 'now' or ISO 8601 text ('2025-06-01', '2025-06-01 12:00',
-- '2025-06-01T12:00:00.000Z', an offset instead of Z); without an offset it is UTC, as in
-- SQLite. Modifiers: '±N days|hours|minutes|seconds' (N may have decimals),
-- '±N months|years' (whole N) and 'start of day|month|year'; format: %Y %m %d %H %M %S %f
-- %j %s %w %%. NULL for a time that does not parse, as in SQLite; an error names a
-- modifier or a format outside these.
CREATE FUNCTION strftime(format text, timevalue text, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    t timestamp;
    md text;
    m text[];
    out text := '';
    i integer := 1;
    c text;
    d integer;
BEGIN
    IF format IS NULL OR timevalue IS NULL THEN
        RETURN NULL;
    END IF;
    IF lower(timevalue) = 'now' THEN
        t := now() AT TIME ZONE 'UTC';
    ELSIF timevalue ~ '^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$' THEN
        t := replace(timevalue, 'T', ' ')::timestamp;
    ELSIF timevalue ~ '^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$' THEN
        t := replace(timevalue, 'T', ' ')::timestamptz AT TIME ZONE 'UTC';
    ELSE
        RETURN NULL;
    END IF;
    FOREACH md IN ARRAY modifiers LOOP
        md := lower(trim(md));
        m := regexp_match(md, '^([+-]?\d+(?:\.\d+)?) +(day|hour|minute|second)s?$');
        IF m IS NULL THEN
            m := regexp_match(md, '^([+-]?\d+) +(month|year)s?$');
        END IF;
        IF m IS NOT NULL THEN
            d := extract(day FROM t);
            t := t + (m[1] || ' ' || m[2])::interval;
            -- SQLite moves the month and lets a day past its end overflow into the next
            -- month (2024-02-29 - 1 year = 2023-03-01); PostgreSQL stops at the last day.
            IF m[2] IN ('month', 'year') AND extract(day FROM t) < d THEN
                t := t + (d - extract(day FROM t)) * interval '1 day';
            END IF;
        ELSIF md IN ('start of day', 'start of month', 'start of year') THEN
            t := date_trunc(substr(md, 10), t);
        ELSE
            RAISE EXCEPTION 'date modifier % is not supported on PostgreSQL', quote_literal(md)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    WHILE i <= length(format) LOOP
        c := substr(format, i, 1);
        IF c <> '%' THEN
            out := out || c;
            i := i + 1;
            CONTINUE;
        END IF;
        c := substr(format, i + 1, 1);
        out := out || CASE c
            WHEN 'Y' THEN to_char(t, 'YYYY')
            WHEN 'm' THEN to_char(t, 'MM')
            WHEN 'd' THEN to_char(t, 'DD')
            WHEN 'H' THEN to_char(t, 'HH24')
            WHEN 'M' THEN to_char(t, 'MI')
            WHEN 'S' THEN to_char(t, 'SS')
            WHEN 'f' THEN to_char(t, 'SS.MS')
            WHEN 'j' THEN to_char(t, 'DDD')
            WHEN 's' THEN floor(extract(epoch FROM t))::bigint::text
            WHEN 'w' THEN extract(dow FROM t)::integer::text
            WHEN '%' THEN '%'
        END;
        IF c NOT IN ('Y', 'm', 'd', 'H', 'M', 'S', 'f', 'j', 's', 'w', '%') THEN
            RAISE EXCEPTION 'strftime format %%% is not supported on PostgreSQL', c
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        i := i + 2;
    END LOOP;
    RETURN out;
END
$$;

-- date(time, modifier...) and datetime(time, modifier...): strftime('%Y-%m-%d', ...) and
-- strftime('%Y-%m-%d %H:%M:%S', ...). Their search path is the schema's, where strftime is.
CREATE FUNCTION date(timevalue text, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE SET search_path FROM CURRENT AS $$
    SELECT strftime('%Y-%m-%d', timevalue, VARIADIC modifiers)
$$;

CREATE FUNCTION datetime(timevalue text, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE SET search_path FROM CURRENT AS $$
    SELECT strftime('%Y-%m-%d %H:%M:%S', timevalue, VARIADIC modifiers)
$$;

CREATE TABLE runs (
    run_id          bigint  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    content_sha256  text    NOT NULL UNIQUE,
    source_path     text    NOT NULL,
    file_bytes      bigint  NOT NULL,
    ingested_at     text    NOT NULL,
    format          text    NOT NULL,
    model_name      text    NOT NULL,
    model_signature text    NOT NULL,
    torch_version   text    NOT NULL,
    device          text    NOT NULL,
    device_name     text    NOT NULL,
    dtype           text    NOT NULL,
    batch_size      bigint  NOT NULL,
    input_shape     text    NOT NULL CHECK (json_valid(input_shape)),
    threads         bigint  NOT NULL,
    timing_method   text    NOT NULL,
    warmup_reps     bigint  NOT NULL,
    reps            bigint  NOT NULL,
    created_at      text    NOT NULL,
    host            text    NOT NULL,
    num_stages      bigint  NOT NULL,
    has_loss        bigint  NOT NULL CHECK (has_loss IN (0, 1)),
    input_bytes     bigint  NOT NULL,
    total_fwd_time_s  double precision NOT NULL,
    total_bwd_time_s  double precision NOT NULL,
    total_saved_bytes bigint,
    total_param_bytes bigint NOT NULL,
    metadata_json   text    NOT NULL CHECK (json_valid(metadata_json))
);

CREATE INDEX runs_created_at ON runs (created_at);
CREATE INDEX runs_model_name ON runs (model_name, created_at);
CREATE INDEX runs_model_structure ON runs (model_name, model_signature, created_at);

CREATE TABLE stages (
    run_id        bigint NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    stage_index   bigint NOT NULL CHECK (stage_index >= 1),
    stage_name    text   NOT NULL,
    stage_kind    text   NOT NULL CHECK (stage_kind IN ('stage', 'loss')),
    reps          bigint NOT NULL CHECK (reps >= 1),
    fwd_time_s    double precision NOT NULL CHECK (fwd_time_s >= 0),
    bwd_time_s    double precision NOT NULL CHECK (bwd_time_s >= 0),
    in_bytes      bigint NOT NULL CHECK (in_bytes >= 0),
    out_bytes     bigint NOT NULL CHECK (out_bytes >= 0),
    saved_bytes   bigint CHECK (saved_bytes >= 0),
    fwd_tmp_bytes bigint CHECK (fwd_tmp_bytes >= 0),
    bwd_tmp_bytes bigint CHECK (bwd_tmp_bytes >= 0),
    param_bytes   bigint NOT NULL CHECK (param_bytes >= 0),
    PRIMARY KEY (run_id, stage_index)
);

CREATE INDEX stages_stage_name ON stages (stage_name);

CREATE TABLE measurements (
    run_id        bigint NOT NULL,
    stage_index   bigint NOT NULL,
    rep           bigint NOT NULL CHECK (rep >= 0),
    fwd_time_s    double precision NOT NULL,
    bwd_time_s    double precision NOT NULL,
    in_bytes      bigint NOT NULL,
    out_bytes     bigint NOT NULL,
    saved_bytes   bigint,
    fwd_tmp_bytes bigint,
    bwd_tmp_bytes bigint,
    param_bytes   bigint NOT NULL,
    PRIMARY KEY (run_id, stage_index, rep),
    FOREIGN KEY (run_id, stage_index) REFERENCES stages (run_id, stage_index) ON DELETE CASCADE
);

CREATE TABLE plans (
    plan_id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id            bigint NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    created_at        text   NOT NULL,
    algo              text   NOT NULL,
    params_json       text   NOT NULL DEFAULT '{}' CHECK (json_valid(params_json)),
    budget_bytes      bigint NOT NULL,
    slots             bigint NOT NULL,
    feasible          bigint NOT NULL CHECK (feasible IN (0, 1)),
    makespan_s        double precision NOT NULL,
    peak_bytes        bigint NOT NULL,
    solve_ms          double precision NOT NULL,
    num_ops           bigint NOT NULL,
    sequence_json     text   NOT NULL CHECK (json_valid(sequence_json)),
    chainplan_version text   NOT NULL
);

CREATE INDEX plans_run_id ON plans (run_id);

CREATE TABLE executions (
    execution_id  bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    plan_id       bigint NOT NULL REFERENCES plans (plan_id) ON DELETE CASCADE,
    created_at    text   NOT NULL,
    steps         bigint NOT NULL CHECK (steps >= 1),
    step_time_s   double precision NOT NULL CHECK (step_time_s >= 0),
    peak_bytes    bigint NOT NULL CHECK (peak_bytes >= 0),
    torch_version text   NOT NULL,
    device        text   NOT NULL,
    host          text   NOT NULL,
    metadata_json text   NOT NULL DEFAULT '{}' CHECK (json_valid(metadata_json))
);

CREATE INDEX executions_plan_id ON executions (plan_id);
CREATE INDEX executions_created_at ON executions (created_at);

CREATE VIEW run_summary AS
SELECT r.run_id, r.created_at, r.model_name, r.model_signature, r.torch_version, r.device,
       r.device_name, r.dtype, r.batch_size, r.threads, r.host, r.num_stages, r.input_bytes,
       r.total_fwd_time_s AS fwd_time_s, r.total_bwd_time_s AS bwd_time_s,
       r.total_saved_bytes AS saved_bytes, r.total_param_bytes AS param_bytes,
       (SELECT count(*) FROM plans p WHERE p.run_id = r.run_id) AS plans
FROM runs r;

CREATE VIEW stage_history AS
SELECT s.run_id, r.created_at, r.model_name, r.model_signature, r.torch_version, r.device,
       r.device_name, r.dtype, r.batch_size, r.host, s.stage_index, s.stage_name, s.stage_kind,
       s.reps, s.fwd_time_s, s.bwd_time_s, s.in_bytes, s.out_bytes, s.saved_bytes,
       s.fwd_tmp_bytes, s.bwd_tmp_bytes, s.param_bytes
FROM stages s JOIN runs r ON r.run_id = s.run_id;

-- fits: SQLite's comparison is the integer 0 or 1 (NULL without executions); PostgreSQL's
-- is a boolean, cast to the same integer.
CREATE VIEW plan_outcomes AS
SELECT p.plan_id, p.run_id, r.model_name, r.device, p.created_at, p.algo, p.budget_bytes,
       p.feasible, p.makespan_s AS predicted_time_s, p.peak_bytes AS predicted_peak_bytes,
       p.solve_ms,
       (SELECT count(*) FROM executions e WHERE e.plan_id = p.plan_id) AS executions,
       (SELECT avg(e.step_time_s) FROM executions e WHERE e.plan_id = p.plan_id) AS measured_time_s,
       (SELECT max(e.peak_bytes) FROM executions e WHERE e.plan_id = p.plan_id) AS measured_peak_bytes,
       (SELECT CAST(max(e.peak_bytes) <= p.budget_bytes AS integer) FROM executions e WHERE e.plan_id = p.plan_id) AS fits,
       (SELECT avg(e.step_time_s) / p.makespan_s - 1 FROM executions e WHERE e.plan_id = p.plan_id AND p.makespan_s > 0) AS time_error
FROM plans p JOIN runs r ON r.run_id = p.run_id;
