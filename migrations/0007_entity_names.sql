-- What Hearth remembers of every entity it has known, so that a newcomer
-- cannot take over what an older one had: the order entities were first seen
-- (seq: a discovered entity seen earlier owns a contested command topic) and
-- the tool name each was given (never handed to another entity, even while
-- the first one is away; released only when its own entity is renamed). Keys are entity ids, or `<entity id>#<part>` for a
-- second tool of one entity (a thermostat's reading).
CREATE TABLE entity_names (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  entity_id   TEXT NOT NULL UNIQUE,
  tool_name   TEXT UNIQUE,                  -- NULL until a tool was named for it
  tool_base   TEXT,                         -- the base the name was made from: renaming an entity renames its tool
  first_seen  TEXT NOT NULL                 -- ISO 8601 UTC, ms
);
