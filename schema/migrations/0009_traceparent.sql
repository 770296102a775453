-- The W3C traceparent of the request that enqueued a job (the frame's
-- traceparent header), handed to every claim of it, so that a trace runs
-- from the enqueuing caller to the handler.

ALTER TABLE stile_jobs ADD COLUMN traceparent TEXT;
