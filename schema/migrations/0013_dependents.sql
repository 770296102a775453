-- Whether a job may have dependents waiting for it: ending one that has
-- none skips the dependents' update (a statement per report). Jobs from
-- before this migration may (1); new ones are enqueued with 0 and marked
-- when a job that waits for them is enqueued.
ALTER TABLE stile_jobs ADD COLUMN dependents INTEGER NOT NULL DEFAULT 1 CHECK (dependents IN (0, 1));
