-- Stable entity keys (the part after the dot of `dehumidifier.switch`), as Home Assistant's entity registry keeps an
-- entity id once given: a discovered entity's key is made once, when its identity (its unique_id, else its discovery
-- id) is first seen under its device, from what its source says (object_id, default_entity_id, else its name within
-- its device, "energy_power"), and kept here, so a restart, the order configs arrive in or a newcomer named alike
-- never moves it. A key an older Hearth made from the unique_id (`8caab5c1d2e3_rl_1`) stays where the database
-- refers to it. Rows are only added (src/devices/entity-keys.ts caps how many).
CREATE TABLE entity_keys (
  device_id   TEXT NOT NULL,          -- the device's id (device_ids)
  identity    TEXT NOT NULL,          -- the entity's own identity at its source
  key         TEXT NOT NULL,          -- the key Hearth gave it: the entity id is <device_id>.<key>
  first_seen  TEXT NOT NULL,          -- ISO 8601 UTC, ms
  PRIMARY KEY (device_id, identity),
  UNIQUE (device_id, key)
) WITHOUT ROWID;
