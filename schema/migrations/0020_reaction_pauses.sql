-- Reactions an operator paused: claims hand out no delivery of theirs
-- until resumed; their events wait past the checkpoint, and appends go on.
ALTER TABLE stile_reactions ADD COLUMN paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1));
