package runtime

import "github.com/stile-run/stile/internal/printf"

// A tenant's settings (stile_settings): small values Stile keeps per
// tenant, by key — its retention override, what the directory was last
// told, the last module's job kinds, an import under way.

// setting reads a setting ("" and false when it is not set).
func (t *Tenant) setting(key string) (string, bool, error) {
	if t.schema.settings != nil {
		v, ok := t.schema.settings[key]
		return v, ok, nil
	}
	rows, err := t.db.Query(`SELECT value FROM stile_settings WHERE key = ?`, key)
	if err != nil {
		return "", false, printf.Errorf("read setting %s: %w", key, err)
	}
	if !rows.Next() {
		return "", false, rows.Err()
	}
	return rows.Text(0), true, rows.Err()
}

// setSetting writes a setting at now.
func (t *Tenant) setSetting(now int64, key, value string) error {
	if err := t.db.Exec(`INSERT INTO stile_settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, value, now); err != nil {
		return printf.Errorf("write setting %s: %w", key, err)
	}
	if t.schema.settings != nil {
		t.schema.settings[key] = value
	}
	return nil
}

// clearSetting removes a setting.
func (t *Tenant) clearSetting(key string) error {
	if err := t.db.Exec(`DELETE FROM stile_settings WHERE key = ?`, key); err != nil {
		return printf.Errorf("clear setting %s: %w", key, err)
	}
	delete(t.schema.settings, key)
	return nil
}

// readSettings reads every setting at once into t.schema.settings, which setting
// then answers from until forgetSettings: a new instance's start reads
// four, in one statement instead of four.
func (t *Tenant) readSettings() error {
	rows, err := t.db.Query(`SELECT key, value FROM stile_settings`)
	if err != nil {
		return printf.Errorf("read settings: %w", err)
	}
	t.schema.settings = map[string]string{}
	for rows.Next() {
		t.schema.settings[rows.Text(0)] = rows.Text(1)
	}
	if err := rows.Err(); err != nil {
		t.schema.settings = nil
		return printf.Errorf("read settings: %w", err)
	}
	return nil
}

// forgetSettings makes setting read storage again.
func (t *Tenant) forgetSettings() { t.schema.settings = nil }
