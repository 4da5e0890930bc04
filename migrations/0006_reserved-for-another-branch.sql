-- Placeholder on branch wt/approvals only: 0006 is another branch's migration.
-- Drop this file at merge (migrations must have no gaps, so this branch needs it to run).
SELECT 1;
