-- 0005_parallel for PostgreSQL (sqlite/0005_parallel.sql): what the parallel planners
-- (advise, search3d; issue 26) store. docs/sql.md documents every table, column and view;
-- ids are assigned by the writer (max + 1 in its transaction).

-- The parallel fields of a profile's stages (docs/formats.md, "Parallel fields"), one row
-- per stage that recorded any: shapes, counts and modules as in the file, and per batch size
-- the median of the repetitions' batch times.
CREATE TABLE stage_parallel (
    run_id           BIGINT NOT NULL,
    stage_index      BIGINT NOT NULL,
    in_shape         TEXT,              -- JSON array, batch first; NULL: not recorded
    out_shape        TEXT,
    weight_count     BIGINT CHECK (weight_count >= 0),
    bias_count       BIGINT CHECK (bias_count >= 0),
    modules_json     TEXT,              -- JSON array of the stage's convolutions and linear layers
    batch_times_json TEXT,              -- {"batch_sizes": [...], "fwd_time_s": [...], "bwd_time_s": [...]}
    PRIMARY KEY (run_id, stage_index),
    FOREIGN KEY (run_id, stage_index) REFERENCES stages (run_id, stage_index) ON DELETE CASCADE
);

-- One row per distinct cluster description an advice was made for (by the SHA-256 of its
-- canonical JSON, chainplan.cluster/v1: nodes expanded, bandwidths in bytes per second).
CREATE TABLE clusters (
    cluster_id     BIGINT PRIMARY KEY,
    content_sha256 TEXT   NOT NULL UNIQUE,
    name           TEXT   NOT NULL,
    created_at     TEXT   NOT NULL,     -- when first stored
    num_nodes      BIGINT NOT NULL,
    num_devices    BIGINT NOT NULL,
    cluster_json   TEXT   NOT NULL      -- the canonical document
);

-- One row per advise or search3d result: what was asked and the whole answer.
CREATE TABLE advice (
    advice_id         BIGINT PRIMARY KEY,
    kind              TEXT   NOT NULL CHECK (kind IN ('advise', 'search3d')),
    run_id            BIGINT REFERENCES runs (run_id) ON DELETE CASCADE,  -- NULL: a chain file
    cluster_id        BIGINT NOT NULL REFERENCES clusters (cluster_id),
    model_name        TEXT   NOT NULL,
    created_at        TEXT   NOT NULL,
    source            TEXT   NOT NULL,  -- 'cli' or 'python'
    request_json      TEXT   NOT NULL,  -- the options, as the Python request spells them
    result_json       TEXT   NOT NULL,  -- chainplan.advice/v1 or chainplan.search3d/v1
    solve_ms          DOUBLE PRECISION NOT NULL,
    chainplan_version TEXT   NOT NULL
);

CREATE INDEX advice_run_id ON advice (run_id);
CREATE INDEX advice_cluster_id ON advice (cluster_id);

-- One row per candidate of an advice, the prediction (a search3d result keeps its top-K and
-- Megatron's pick, whose candidate is -1).
CREATE TABLE advice_candidates (
    advice_id                  BIGINT NOT NULL REFERENCES advice (advice_id) ON DELETE CASCADE,
    candidate                  BIGINT NOT NULL,  -- position in the result's list, from 0
    rank                       BIGINT NOT NULL,  -- 1 = best; 0: infeasible (advise)
    strategy                   TEXT   NOT NULL,  -- advise: 'data', 'df', ...; search3d: '3d' or 'megatron'
    devices                    BIGINT NOT NULL,
    pp                         BIGINT,           -- search3d's degrees (NULL for advise)
    dp                         BIGINT,
    tmp                        BIGINT,
    mbs                        BIGINT,
    data_degree                BIGINT,           -- advise's hybrids: p1 and p2
    split_degree               BIGINT,
    feasible                   BIGINT NOT NULL CHECK (feasible IN (0, 1)),
    predicted_iteration_time_s DOUBLE PRECISION NOT NULL,
    predicted_epoch_time_s     DOUBLE PRECISION, -- advise only
    predicted_memory_bytes     BIGINT NOT NULL,  -- per device (search3d: the largest stage)
    capacity_bytes             BIGINT NOT NULL,
    detail_json                TEXT   NOT NULL,  -- the candidate as the result writes it
    PRIMARY KEY (advice_id, candidate)
);

-- One row per measured run of an advised candidate (chainplan advice record,
-- Advice.record): the time of one iteration, mean over iterations 2..n (spec §5.5).
CREATE TABLE advice_measurements (
    measurement_id   BIGINT PRIMARY KEY,
    advice_id        BIGINT NOT NULL,
    candidate        BIGINT NOT NULL,
    created_at       TEXT   NOT NULL,
    iterations       BIGINT NOT NULL CHECK (iterations >= 1),
    iteration_time_s DOUBLE PRECISION NOT NULL CHECK (iteration_time_s > 0),
    peak_bytes       BIGINT CHECK (peak_bytes >= 0),          -- NULL: not measured
    out_of_memory    BIGINT NOT NULL DEFAULT 0 CHECK (out_of_memory IN (0, 1)),
    host             TEXT   NOT NULL,
    metadata_json    TEXT   NOT NULL DEFAULT '{}',
    FOREIGN KEY (advice_id, candidate) REFERENCES advice_candidates (advice_id, candidate) ON DELETE CASCADE
);

CREATE INDEX advice_measurements_candidate ON advice_measurements (advice_id, candidate);

-- Every measured candidate beside its prediction, with ParaDL's accuracy
-- 1 − |predicted − measured| / measured (spec §5.5; NULL for a run that ran out of memory).
CREATE VIEW advice_accuracy AS
SELECT a.advice_id, a.kind, a.model_name, cl.name AS cluster, a.run_id, c.candidate, c.rank, c.strategy,
       c.devices, c.pp, c.dp, c.tmp, c.mbs, c.data_degree, c.split_degree, c.feasible,
       c.predicted_iteration_time_s, c.predicted_memory_bytes, c.capacity_bytes,
       m.measurement_id, m.created_at AS measured_at, m.iterations,
       m.iteration_time_s AS measured_iteration_time_s, m.peak_bytes AS measured_peak_bytes,
       m.out_of_memory,
       CASE WHEN m.out_of_memory = 1 THEN NULL
            ELSE 1.0 - abs(c.predicted_iteration_time_s - m.iteration_time_s) / m.iteration_time_s END AS accuracy
FROM advice_measurements m
JOIN advice_candidates c ON c.advice_id = m.advice_id AND c.candidate = m.candidate
JOIN advice a ON a.advice_id = m.advice_id
JOIN clusters cl ON cl.cluster_id = a.cluster_id;
