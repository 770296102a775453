-- The W3C traceparent of the request that appended an event (an append, a
-- command, a settlement dispatching one), handed to each delivery of it,
-- so that a reaction's trace goes on from the request that caused it.

ALTER TABLE stile_events ADD COLUMN traceparent TEXT;
