-- destructive: drops the storage counters' triggers, which an older Stile reads.
-- A job that runs once writes five rows: its row and its ready entry at
-- enqueue, its row and its lease entry at the claim, its row at the report.
-- Everything else a job cycle wrote is dropped here, since Cloudflare
-- bills every row written, index entries and triggers' writes included:
--
-- - the storage counter's triggers on stile_jobs (one write at enqueue,
--   one at the report): GET /storage counts jobs when asked instead, by
--   reading them (a row read costs a thousandth of a row written);
-- - stile_jobs_state's entries for available and completed jobs (one
--   each): available jobs are listed from the ready indexes, completed
--   ones in id order from the table itself;
-- - stile_jobs_finished's entry for a completed job (one): retention finds
--   completed jobs in id order, among those created before its cutoff.
--
-- The same counter's triggers on stile_inbox go too (one write as a
-- delivery is claimed, one as it settles, of its eight): deliveries are
-- kept a day by default, and GET /storage reads them when asked.
--
-- And the events' (one write per event appended, of its five): the log is
-- append-only and its seq gapless, so stile_storage's row for events
-- becomes a checkpoint instead, the events counted so far (through seq =
-- rows) and their bytes, which GET /storage brings up to the log's end
-- as it reads it, reading only the events appended since.
--
-- No row is removed or rewritten, but an older module serving over this
-- would rely on the counters its triggers kept (its GET /storage would
-- show them frozen, and its import would take a tenant for empty that is
-- not): an older Stile refuses to serve over it (503 schema_ahead).
DROP TRIGGER stile_storage_jobs_insert;
DROP TRIGGER stile_storage_jobs_update;
DROP TRIGGER stile_storage_jobs_delete;
DROP TRIGGER stile_storage_inbox_insert;
DROP TRIGGER stile_storage_inbox_update;
DROP TRIGGER stile_storage_inbox_delete;
DROP TRIGGER stile_storage_events_insert;
DROP TRIGGER stile_storage_events_delete;

-- Listing and counting by state, for the states off a job's usual path:
-- waiting for parents, for a time, for a retry, or ended without
-- completing. A job that is enqueued ready and completes never has an
-- entry.
DROP INDEX stile_jobs_state;
CREATE INDEX stile_jobs_listed ON stile_jobs (state, id)
  WHERE state IN ('pending', 'scheduled', 'retryable', 'cancelled', 'dead');

-- What retention looks for among jobs that ended without completing,
-- oldest first.
DROP INDEX stile_jobs_finished;
CREATE INDEX stile_jobs_ended ON stile_jobs (state, finished_at)
  WHERE state IN ('cancelled', 'dead');
