-- The command topics of every remembered discovered entity, so the embedded broker gates them from the first
-- second after a restart: its retained messages are gone and devices re-announce late, and until then an
-- anonymous client could publish UNLOCK on an absent lock's command topic. Forgotten with the entity.
CREATE TABLE entity_command_topics (
  entity_id   TEXT NOT NULL REFERENCES entity_names (entity_id) ON DELETE CASCADE,
  topic       TEXT NOT NULL,
  PRIMARY KEY (entity_id, topic)
);
CREATE INDEX entity_command_topics_topic ON entity_command_topics (topic);
