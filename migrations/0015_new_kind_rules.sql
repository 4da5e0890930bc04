-- Built-in rules for kinds added after 0001 (#31). A siren is a security device, as strict as the lock:
-- sounding it or silencing it needs a person to confirm, even for owners (a silenced siren is an unlocked
-- door; a sounded one wakes the street). Installing firmware needs a person too: it can brick a device and
-- takes it offline meanwhile. Priority 100 like the other confirm rules: an owner's allow above 100 waives them.
INSERT INTO policy_rules (subject, target_type, target, action, effect, priority, note, builtin) VALUES
  ('*', 'kind', 'siren', 'turn_on|turn_off', 'confirm', 100, 'built-in: sounding or silencing a siren needs a person to confirm, even for owners', 1),
  ('*', 'kind', 'update', 'install', 'confirm', 100, 'built-in: installing a firmware update needs a person to confirm, even for owners', 1);
