-- The speaker's area (issue 23): a token may say where its device speaks from
-- (`hearth token create kitchen-tablet --area Kitchen`), and a policy rule may
-- match only calls made from one area (`--from-area Hallway`: the garage opens
-- only from the hallway satellite). NULL: no area / any area.
ALTER TABLE tokens ADD COLUMN area TEXT;
ALTER TABLE policy_rules ADD COLUMN from_area TEXT;
