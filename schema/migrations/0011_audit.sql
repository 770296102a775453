-- Operator actions (retry, cancel, delete, skip, rebuild, pause, schedules,
-- limits) with who took them: the role and token id the host verified.
-- Written in the action's own transaction: only what committed is listed.

CREATE TABLE stile_audit (
id INTEGER PRIMARY KEY,
at INTEGER NOT NULL,
role TEXT NOT NULL,
token_id TEXT NOT NULL,
route TEXT NOT NULL,
path TEXT NOT NULL,
status INTEGER NOT NULL
) STRICT;
