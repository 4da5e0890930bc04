-- Stable device ids (issue 41), as Home Assistant's entity registry keeps them: a discovered device's id is made
-- once, from its name, when its identity at its source is first seen (a Zigbee2MQTT IEEE address or group id, a
-- Home Assistant discovery device's identifier), and kept here so that a rename, a restart or a forged device list
-- never moves it: policy rules, approvals, history, remembered command topics and the home's choices are keyed by
-- it. Rows are only added (src/devices/device-ids.ts caps how many).
CREATE TABLE device_ids (
  source      TEXT NOT NULL,          -- zigbee2mqtt, homeassistant
  identity    TEXT NOT NULL,          -- the device's own identity at that source
  id          TEXT NOT NULL UNIQUE,   -- the id Hearth gave it
  first_seen  TEXT NOT NULL,          -- ISO 8601 UTC, ms
  PRIMARY KEY (source, identity)
) WITHOUT ROWID;
