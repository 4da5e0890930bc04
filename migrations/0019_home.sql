-- The home as people arrange it (issue 41), one table per concept as Home Assistant's registries have them:
-- floors, areas (each on at most one floor), and what a person chose for a device or an entity (its area, its
-- name, its aliases, whether agents are shown it). A device is keyed by its source and its own identity
-- (`zigbee2mqtt:0x00158d0001a2b3c4`, an HA discovery device's first identifier, a device file's id), so a choice
-- survives a rename of the device and a restart; an entity by its device's identity and its key. Each row holds
-- the record as JSON: the record's fields are checked by src/devices/home/*.ts, never by the table.
CREATE TABLE home_floors (
  id      TEXT PRIMARY KEY,
  record  TEXT NOT NULL
);
CREATE TABLE home_areas (
  id      TEXT PRIMARY KEY,
  record  TEXT NOT NULL
);
CREATE TABLE home_devices (
  id      TEXT PRIMARY KEY,   -- the device's identity: <source>:<its own id>
  record  TEXT NOT NULL
);
CREATE TABLE home_entities (
  id      TEXT PRIMARY KEY,   -- <device identity>#<entity key>
  record  TEXT NOT NULL
);
