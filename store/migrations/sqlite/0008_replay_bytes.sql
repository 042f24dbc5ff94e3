-- 0008_replay_bytes: the size of each stage's random-number state (issue 36;
-- chainplan.chain/v2's replay_bytes, docs/formats.md): what an executor keeps for a stage
-- that draws random numbers (dropout) and that a plan recomputes, counted once per plan on
-- top of its peak. NULL in the runs stored before and for stages that draw nothing.
-- postgres/0008_replay_bytes.sql is the same schema in PostgreSQL's dialect.
ALTER TABLE stages ADD COLUMN replay_bytes INTEGER CHECK (replay_bytes >= 0);
ALTER TABLE measurements ADD COLUMN replay_bytes INTEGER;
