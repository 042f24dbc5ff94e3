-- 0008_replay_bytes for PostgreSQL (sqlite/0008_replay_bytes.sql): the size of each
-- stage's random-number state; NULL before and for stages that draw nothing.
ALTER TABLE stages ADD COLUMN replay_bytes bigint CHECK (replay_bytes >= 0);
ALTER TABLE measurements ADD COLUMN replay_bytes bigint;
