-- Host-device copy bandwidth measured for a run (pofo plans with bandwidth "auto"): the
-- newest row of a run is the one planners use.
CREATE TABLE bandwidths (
    bandwidth_id          INTEGER PRIMARY KEY,
    run_id                INTEGER NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    measured_at           TEXT    NOT NULL,
    bandwidth_bytes_per_s REAL    NOT NULL CHECK (bandwidth_bytes_per_s > 0),
    device                TEXT    NOT NULL,              -- "cuda:0", "cpu", ...
    method                TEXT    NOT NULL               -- how it was measured
) STRICT;

CREATE INDEX bandwidths_run_id ON bandwidths (run_id, measured_at);
