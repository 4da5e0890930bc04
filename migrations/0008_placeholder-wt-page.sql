-- Placeholder: migration numbers 0007-0010 belong to other branches (the lead renumbers at merge); this keeps wt/page gap-free.
SELECT 1;
