-- When each remembered entity was last seen, so that what Hearth remembers is bounded: an entity not seen for
-- discovery.rememberDays is forgotten (its tool name free again), and at most discovery.rememberMax are kept,
-- the longest unseen going first. A flood of invented devices no longer stays in the table for ever.
ALTER TABLE entity_names ADD COLUMN last_seen TEXT;
UPDATE entity_names SET last_seen = first_seen;
CREATE INDEX entity_names_last_seen ON entity_names (last_seen);
