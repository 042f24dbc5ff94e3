-- 0007_link_bandwidths: what link a measured bandwidth is of (issue 34; docs/sql.md): 'host'
-- (device<->host copies, pofo's "auto"; every row stored before), 'intra' (between two
-- devices of one node) or 'inter' (between nodes). search3d and advise read a run's
-- 'intra' and 'inter' rows (and 'host' for advise's offloading) in place of the cluster
-- file's bandwidths (docs/distributed.md, "Measured stage times and bandwidths").
-- postgres/0007_link_bandwidths.sql is the same schema in PostgreSQL's dialect.
ALTER TABLE bandwidths ADD COLUMN link TEXT NOT NULL DEFAULT 'host' CHECK (link IN ('host', 'intra', 'inter'));
