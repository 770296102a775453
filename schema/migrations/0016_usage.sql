-- A tenant's usage, one row per UTC day (2006-01-02): requests and alarms
-- its object served, pushes it sent, and what they cost as the host
-- measured it (storage rows read and written, module time). mark is the
-- host's running total last recorded ("gen,read,written,µs"), so that a
-- total handed in again adds only what grew since. The module writes the
-- day's row at most once per 30 s; it is kept 400 days, is not counted
-- by stile_storage (its own trigger would double the cost of every
-- record) and is not exported (it is the bill of this object, not the
-- tenant's data).
CREATE TABLE stile_usage (
day TEXT PRIMARY KEY,
requests INTEGER NOT NULL,
alarms INTEGER NOT NULL,
rows_read INTEGER NOT NULL,
rows_written INTEGER NOT NULL,
module_us INTEGER NOT NULL,
pushes INTEGER NOT NULL,
mark TEXT NOT NULL
) STRICT, WITHOUT ROWID;
