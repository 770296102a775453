-- Who declared a schedule: the tenant (PUT /schedules/{name}) or the
-- tenant module (App.Schedule), which applies its schedules to every
-- tenant when the tenant migrates and refuses per-tenant changes to them.

ALTER TABLE stile_schedules ADD COLUMN owner TEXT NOT NULL DEFAULT 'tenant' CHECK (owner IN ('tenant', 'module'));
