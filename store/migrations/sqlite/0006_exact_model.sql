-- 0006_exact_model: the exact memory model of each stage and its operation-level options
-- (issue 19, chainplan.chain/v2; docs/formats.md and docs/sql.md): whether the stage's
-- backward needs its input and its output, the recomputation that regenerates only what the
-- backward reads (its time and temporary peak), and the options as the profile's JSON. NULL in
-- the runs stored before, and in profiles that did not measure them: their chains read as
-- version 1 (every stage saves its input and output and recomputes its whole forward).
-- postgres/0006_exact_model.sql is the same schema in PostgreSQL's dialect.
ALTER TABLE stages ADD COLUMN saves_input INTEGER CHECK (saves_input IN (0, 1));
ALTER TABLE stages ADD COLUMN saves_output INTEGER CHECK (saves_output IN (0, 1));
ALTER TABLE stages ADD COLUMN recompute_time_s REAL CHECK (recompute_time_s >= 0);
ALTER TABLE stages ADD COLUMN recompute_tmp_bytes INTEGER CHECK (recompute_tmp_bytes >= 0);
ALTER TABLE stages ADD COLUMN options_json TEXT CHECK (options_json IS NULL OR json_valid(options_json));

ALTER TABLE measurements ADD COLUMN saves_input INTEGER CHECK (saves_input IN (0, 1));
ALTER TABLE measurements ADD COLUMN saves_output INTEGER CHECK (saves_output IN (0, 1));
ALTER TABLE measurements ADD COLUMN recompute_time_s REAL;
ALTER TABLE measurements ADD COLUMN recompute_tmp_bytes INTEGER;
ALTER TABLE measurements ADD COLUMN options_json TEXT CHECK (options_json IS NULL OR json_valid(options_json));
