-- 0001_init: the first schema of the chainplan profile store. docs/sql.md documents every
-- table, column and view; change both together. Times are seconds (REAL, *_s), sizes bytes
-- (INTEGER, *_bytes), timestamps RFC 3339 UTC text ('2025-06-01T12:00:00.000Z'), which
-- sorts in time order and which SQLite's date functions read.

-- One row per ingested profile file: where it came from and how it was measured.
CREATE TABLE runs (
    run_id          INTEGER PRIMARY KEY,
    content_sha256  TEXT    NOT NULL UNIQUE,  -- of the file's bytes: ingest is idempotent
    source_path     TEXT    NOT NULL,         -- the path given to ingest
    file_bytes      INTEGER NOT NULL,
    ingested_at     TEXT    NOT NULL,
    format          TEXT    NOT NULL,         -- 'chainplan.profile/v1'
    model_name      TEXT    NOT NULL,
    model_signature TEXT    NOT NULL,         -- digest of the model's structure
    torch_version   TEXT    NOT NULL,
    device          TEXT    NOT NULL,         -- 'cpu', 'cuda:0', ...
    device_name     TEXT    NOT NULL,
    dtype           TEXT    NOT NULL,
    batch_size      INTEGER NOT NULL,
    input_shape     TEXT    NOT NULL CHECK (json_valid(input_shape)),  -- JSON array
    threads         INTEGER NOT NULL,
    timing_method   TEXT    NOT NULL,
    warmup_reps     INTEGER NOT NULL,
    reps            INTEGER NOT NULL,
    created_at      TEXT    NOT NULL,         -- when the profile was taken
    host            TEXT    NOT NULL,
    num_stages      INTEGER NOT NULL,         -- L, the loss excluded
    has_loss        INTEGER NOT NULL CHECK (has_loss IN (0, 1)),
    input_bytes     INTEGER NOT NULL,         -- a_0, stage 1's in_bytes
    -- Totals over the run's stages (loss included), stored at ingest since runs never
    -- change: questions across thousands of runs read one row per run, not every stage.
    total_fwd_time_s  REAL    NOT NULL,
    total_bwd_time_s  REAL    NOT NULL,
    total_saved_bytes INTEGER,                -- NULL when a stage's saved_bytes is
    total_param_bytes INTEGER NOT NULL,
    metadata_json   TEXT    NOT NULL CHECK (json_valid(metadata_json))  -- all schema metadata
) STRICT;

CREATE INDEX runs_created_at ON runs (created_at);
CREATE INDEX runs_model_name ON runs (model_name, created_at);
CREATE INDEX runs_model_structure ON runs (model_name, model_signature, created_at);

-- One row per stage of a run: the medians over its repetitions (what chains are made of).
-- The loss is the row of stage_kind 'loss', stage_index num_stages + 1.
CREATE TABLE stages (
    run_id        INTEGER NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    stage_index   INTEGER NOT NULL CHECK (stage_index >= 1),
    stage_name    TEXT    NOT NULL,
    stage_kind    TEXT    NOT NULL CHECK (stage_kind IN ('stage', 'loss')),
    reps          INTEGER NOT NULL CHECK (reps >= 1),  -- measurements aggregated
    fwd_time_s    REAL    NOT NULL CHECK (fwd_time_s >= 0),
    bwd_time_s    REAL    NOT NULL CHECK (bwd_time_s >= 0),
    in_bytes      INTEGER NOT NULL CHECK (in_bytes >= 0),
    out_bytes     INTEGER NOT NULL CHECK (out_bytes >= 0),
    saved_bytes   INTEGER CHECK (saved_bytes >= 0),    -- NULL: not measured
    fwd_tmp_bytes INTEGER CHECK (fwd_tmp_bytes >= 0),  -- NULL: not measured
    bwd_tmp_bytes INTEGER CHECK (bwd_tmp_bytes >= 0),  -- NULL: not measured
    param_bytes   INTEGER NOT NULL CHECK (param_bytes >= 0),
    PRIMARY KEY (run_id, stage_index)
) STRICT, WITHOUT ROWID;

CREATE INDEX stages_stage_name ON stages (stage_name);

-- One row per stage and repetition: the rows of the profile file as measured.
CREATE TABLE measurements (
    run_id        INTEGER NOT NULL,
    stage_index   INTEGER NOT NULL,
    rep           INTEGER NOT NULL CHECK (rep >= 0),
    fwd_time_s    REAL    NOT NULL,
    bwd_time_s    REAL    NOT NULL,
    in_bytes      INTEGER NOT NULL,
    out_bytes     INTEGER NOT NULL,
    saved_bytes   INTEGER,
    fwd_tmp_bytes INTEGER,
    bwd_tmp_bytes INTEGER,
    param_bytes   INTEGER NOT NULL,
    PRIMARY KEY (run_id, stage_index, rep),
    FOREIGN KEY (run_id, stage_index) REFERENCES stages (run_id, stage_index) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

-- One row per plan computed from a run's chain (chainplan solve --run).
CREATE TABLE plans (
    plan_id           INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    created_at        TEXT    NOT NULL,
    algo              TEXT    NOT NULL,            -- 'rotor', 'sequential', ...
    params_json       TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(params_json)),
    budget_bytes      INTEGER NOT NULL,            -- activation memory budget, a_0 included
    slots             INTEGER NOT NULL,            -- memory discretization
    feasible          INTEGER NOT NULL CHECK (feasible IN (0, 1)),
    makespan_s        REAL    NOT NULL,            -- predicted time of one training step
    peak_bytes        INTEGER NOT NULL,            -- predicted activation peak
    solve_ms          REAL    NOT NULL,            -- solver wall time, milliseconds
    num_ops           INTEGER NOT NULL,            -- length of the sequence
    sequence_json     TEXT    NOT NULL CHECK (json_valid(sequence_json)),  -- [{"op":..,"stage":..}]
    chainplan_version TEXT    NOT NULL
) STRICT;

CREATE INDEX plans_run_id ON plans (run_id);

-- One row per measured execution of a plan (the Python executors record them).
CREATE TABLE executions (
    execution_id  INTEGER PRIMARY KEY,
    plan_id       INTEGER NOT NULL REFERENCES plans (plan_id) ON DELETE CASCADE,
    created_at    TEXT    NOT NULL,
    steps         INTEGER NOT NULL CHECK (steps >= 1),  -- training steps measured
    step_time_s   REAL    NOT NULL CHECK (step_time_s >= 0),  -- median over the steps
    peak_bytes    INTEGER NOT NULL CHECK (peak_bytes >= 0),   -- measured activation peak
    torch_version TEXT    NOT NULL,
    device        TEXT    NOT NULL,
    host          TEXT    NOT NULL,
    metadata_json TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata_json))
) STRICT;

CREATE INDEX executions_plan_id ON executions (plan_id);
CREATE INDEX executions_created_at ON executions (created_at);

-- Runs with their totals and plan count: one line per profile.
CREATE VIEW run_summary AS
SELECT r.run_id, r.created_at, r.model_name, r.model_signature, r.torch_version, r.device,
       r.device_name, r.dtype, r.batch_size, r.threads, r.host, r.num_stages, r.input_bytes,
       r.total_fwd_time_s AS fwd_time_s, r.total_bwd_time_s AS bwd_time_s,
       r.total_saved_bytes AS saved_bytes, r.total_param_bytes AS param_bytes,
       (SELECT count(*) FROM plans p WHERE p.run_id = r.run_id) AS plans
FROM runs r;

-- Every stage with its run's provenance: the view for questions across runs.
CREATE VIEW stage_history AS
SELECT s.run_id, r.created_at, r.model_name, r.model_signature, r.torch_version, r.device,
       r.device_name, r.dtype, r.batch_size, r.host, s.stage_index, s.stage_name, s.stage_kind,
       s.reps, s.fwd_time_s, s.bwd_time_s, s.in_bytes, s.out_bytes, s.saved_bytes,
       s.fwd_tmp_bytes, s.bwd_tmp_bytes, s.param_bytes
FROM stages s JOIN runs r ON r.run_id = s.run_id;

-- Every plan with what was predicted and what its executions measured. fits is 1 when
-- the largest measured peak stayed within the budget, NULL before any execution.
CREATE VIEW plan_outcomes AS
SELECT p.plan_id, p.run_id, r.model_name, r.device, p.created_at, p.algo, p.budget_bytes,
       p.feasible, p.makespan_s AS predicted_time_s, p.peak_bytes AS predicted_peak_bytes,
       p.solve_ms,
       (SELECT count(*) FROM executions e WHERE e.plan_id = p.plan_id) AS executions,
       (SELECT avg(e.step_time_s) FROM executions e WHERE e.plan_id = p.plan_id) AS measured_time_s,
       (SELECT max(e.peak_bytes) FROM executions e WHERE e.plan_id = p.plan_id) AS measured_peak_bytes,
       (SELECT max(e.peak_bytes) <= p.budget_bytes FROM executions e WHERE e.plan_id = p.plan_id) AS fits,
       (SELECT avg(e.step_time_s) / p.makespan_s - 1 FROM executions e WHERE e.plan_id = p.plan_id AND p.makespan_s > 0) AS time_error
FROM plans p JOIN runs r ON r.run_id = p.run_id;
