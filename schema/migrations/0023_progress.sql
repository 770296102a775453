-- A running job's progress, as its handler last published it with a
-- heartbeat (POST /jobs/{id}/heartbeat with "progress"): a JSON value of
-- at most 4 KiB, fenced like the output. A new attempt's claim clears it;
-- an attempt's end keeps it, so the last value stays readable.
ALTER TABLE stile_jobs ADD COLUMN progress TEXT;
