-- An approval binds to where its command goes and what it says (issue 40): a
-- lock's command topic moved by a new discovery config between the request and
-- the grant must not carry the approved command to the new topic.

-- Canonical JSON of the messages the held call would publish ([{payload, topic}]);
-- NULL for a call whose messages are not known ahead (a flow's own tool).
ALTER TABLE approvals ADD COLUMN sends TEXT;
-- sha256 hex of `sends`: part of what a later call must match to use the approval.
ALTER TABLE approvals ADD COLUMN sends_hash TEXT;
-- Why Hearth refused a person's grant (what the call would send changed); NULL otherwise.
ALTER TABLE approvals ADD COLUMN refused TEXT;
