-- 0007_link_bandwidths for PostgreSQL (sqlite/0007_link_bandwidths.sql): what link a
-- measured bandwidth is of: 'host' (every row stored before), 'intra' or 'inter'.
ALTER TABLE bandwidths ADD COLUMN link text NOT NULL DEFAULT 'host' CHECK (link IN ('host', 'intra', 'inter'));
