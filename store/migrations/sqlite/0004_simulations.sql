-- 0004_simulations: every pipeline simulation made from a stored run (chainplan pipesim
-- --run, chainplan.pipesim on a stored profile): the schedule, its parameters and what it
-- predicted, one row per simulation and one per stage, so that SQL can compare schedules
-- across runs. docs/sql.md documents the columns; postgres/0004_simulations.sql is the same
-- schema in PostgreSQL's dialect.
-- In unit time (unit_time = 1) the *_s columns hold time points, not seconds.
CREATE TABLE simulations (
    simulation_id       INTEGER PRIMARY KEY,
    run_id              INTEGER NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    plan_id             INTEGER REFERENCES plans (plan_id) ON DELETE SET NULL,  -- the stored plan simulated, if any
    created_at          TEXT    NOT NULL,
    schedule            TEXT    NOT NULL,      -- 'gpipe', '1f1b-flush', 'pipedream-async', '2bw', 'timeprest', 'periodic'
    num_stages          INTEGER NOT NULL CHECK (num_stages >= 1),
    microbatches        INTEGER NOT NULL CHECK (microbatches >= 1),  -- N per mini-batch
    minibatches         INTEGER NOT NULL CHECK (minibatches >= 1),   -- K simulated
    unit_time           INTEGER NOT NULL CHECK (unit_time IN (0, 1)),
    params_json         TEXT    NOT NULL,      -- the request: bandwidth, latency, checkpointing, cap, ...
    makespan_s          REAL NOT NULL,  -- the K mini-batches
    period_s            REAL NOT NULL,  -- steady-state time per mini-batch
    microbatch_period_s REAL NOT NULL,  -- period_s / microbatches
    steady_bubble       REAL NOT NULL,  -- mean over stages of the idle share of a steady period
    peak_bytes          INTEGER NOT NULL,      -- the largest device's peak memory
    version_difference  INTEGER NOT NULL,      -- v in the steady state (1: synchronous)
    max_staleness       INTEGER NOT NULL,
    result_json         TEXT    NOT NULL,      -- the chainplan.pipesim/v1 document
    chainplan_version   TEXT    NOT NULL
);

CREATE INDEX simulations_run_id ON simulations (run_id);

CREATE TABLE simulation_stages (
    simulation_id         INTEGER NOT NULL REFERENCES simulations (simulation_id) ON DELETE CASCADE,
    stage_index           INTEGER NOT NULL CHECK (stage_index >= 0),  -- 0-based, as in pipeline plans
    first_layer           INTEGER NOT NULL,
    last_layer            INTEGER NOT NULL,
    device                INTEGER NOT NULL,
    checkpointed          INTEGER NOT NULL CHECK (checkpointed IN (0, 1)),
    busy_s                REAL NOT NULL,
    bubble                REAL NOT NULL,  -- idle share of the makespan
    steady_bubble         REAL NOT NULL,  -- idle share of a steady period
    peak_inflight         INTEGER NOT NULL,           -- micro-batches held at once
    peak_activation_bytes INTEGER NOT NULL,
    weight_versions       INTEGER NOT NULL,           -- versions held at once
    device_peak_bytes     INTEGER NOT NULL,           -- its device's peak memory
    PRIMARY KEY (simulation_id, stage_index)
);

-- Every simulation with its run's provenance: the view for comparing schedules.
CREATE VIEW simulation_summary AS
SELECT s.simulation_id, s.run_id, r.model_name, r.device, r.batch_size, s.plan_id, s.created_at,
       s.schedule, s.num_stages, s.microbatches, s.minibatches, s.unit_time, s.makespan_s,
       s.period_s, s.microbatch_period_s, s.steady_bubble, s.peak_bytes, s.version_difference,
       s.max_staleness
FROM simulations s JOIN runs r ON r.run_id = s.run_id;
