-- The state topics (state and attribute topics) of every remembered discovered entity: a state topic stays the
-- device's that read it while Hearth remembers that device, present or away, so a newcomer cannot read an absent
-- lock's topic and show its readings under its own name. Forgotten with the entity (bounded as entity_names is).
CREATE TABLE entity_state_topics (
  entity_id   TEXT NOT NULL REFERENCES entity_names (entity_id) ON DELETE CASCADE,
  topic       TEXT NOT NULL,
  PRIMARY KEY (entity_id, topic)
);
