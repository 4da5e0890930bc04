-- Placeholder on branch wt/voice only: migration numbers must not have gaps, and this
-- branch was given 0010. Another branch owns 0007; the lead drops this file at merge.
SELECT 1;
