-- The tables each generation of a projection was created with, as a
-- comma-separated list of their logical names, so that a generation is
-- dropped whole even after its definition lost a table (NULL: created
-- before this column; the current definition's tables are dropped).

ALTER TABLE stile_projection_generations ADD COLUMN tables TEXT;
