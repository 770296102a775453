-- Whether a job may have dependents waiting for it: ending one that has
-- none skips the dependents' update (a statement per report). Jobs from
-- before this migration may (1); new ones are enqueued with 0, and the
-- trigger marks a job as soon as another waits for it, whichever module
-- version (an older one too, serving over this additive schema) records
-- the dependency.
ALTER TABLE stile_jobs ADD COLUMN dependents INTEGER NOT NULL DEFAULT 1 CHECK (dependents IN (0, 1));
CREATE TRIGGER stile_jobs_waited_for AFTER INSERT ON stile_job_deps WHEN NEW.resolved IS NULL BEGIN
UPDATE stile_jobs SET dependents = 1 WHERE id = NEW.parent_id AND dependents = 0;
END;
