-- 0003_plan_json for PostgreSQL (sqlite/0003_plan_json.sql): every plan's whole document.
-- Plans stored earlier get a document rebuilt from their columns, marked with
-- plan_json_rebuilt = 1 (json_build_object writes what SQLite's json_object does).
ALTER TABLE plans ADD COLUMN plan_json text CHECK (plan_json IS NULL OR json_valid(plan_json));
ALTER TABLE plans ADD COLUMN plan_json_rebuilt bigint NOT NULL DEFAULT 0
    CHECK (plan_json_rebuilt IN (0, 1));

UPDATE plans SET plan_json_rebuilt = 1, plan_json = json_build_object(
    'algo', algo,
    'feasible', feasible = 1,
    'makespan', makespan_s,
    'peak_bytes', peak_bytes,
    'budget_bytes', budget_bytes,
    'slots', slots,
    'solve_ms', solve_ms,
    'sequence', sequence_json::json)::text;
