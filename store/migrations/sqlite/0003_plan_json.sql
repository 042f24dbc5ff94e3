-- Every plan's whole document, as `chainplan solve` prints it, whatever its family: the
-- offload section of offloading plans (lost before this migration: only the sequence was
-- kept), the chosen candidate of pofo, the pipeline plans to come. Any plan stored from
-- now on replays from the database (`chainplan simulate --plan-id N`).
--
-- Plans stored earlier get a document rebuilt from their columns, marked with
-- plan_json_rebuilt = 1: complete for checkpointing plans, without the transfers for
-- offloading ones (they were never stored).
ALTER TABLE plans ADD COLUMN plan_json TEXT CHECK (plan_json IS NULL OR json_valid(plan_json));
ALTER TABLE plans ADD COLUMN plan_json_rebuilt INTEGER NOT NULL DEFAULT 0
    CHECK (plan_json_rebuilt IN (0, 1));

UPDATE plans SET plan_json_rebuilt = 1, plan_json = json_object(
    'algo', algo,
    'feasible', json(CASE feasible WHEN 1 THEN 'true' ELSE 'false' END),
    'makespan', makespan_s,
    'peak_bytes', peak_bytes,
    'budget_bytes', budget_bytes,
    'slots', slots,
    'solve_ms', solve_ms,
    'sequence', json(sequence_json));
