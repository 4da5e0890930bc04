-- What a device whose move waits for a person keeps of its entities that follow the move (its sensors: a name, a
-- tool base, a state topic, and where each reading is found), as the registry had them before the move. A forged
-- Zigbee2MQTT list renaming the lock must not rename its sensors nor hand their state topic to a newcomer, and a
-- restart of Hearth while the move waits must not either. Kept until the move is confirmed, the device is back on
-- its topics, or it is forgotten.
CREATE TABLE entity_held_forms (
  entity_id   TEXT PRIMARY KEY REFERENCES entity_names (entity_id) ON DELETE CASCADE,
  form        TEXT NOT NULL   -- JSON: { name, toolBase?, stateTopic?, valuePath?, transform?, attributes }
) WITHOUT ROWID;
