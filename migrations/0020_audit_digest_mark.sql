-- Issue 40: the database remembers that signed digests were written for it (and the number of the first), so a
-- digest file found missing (with the sequence file beside the key, or the key itself, gone too) is a finding for
-- an owner to accept, never a fresh start. One row, written once, by the first signed digest or `hearth audit accept`.
CREATE TABLE audit_digest_mark (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  first_seq INTEGER NOT NULL,
  at        TEXT    NOT NULL
);
