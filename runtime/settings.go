package runtime

import "github.com/stile-run/stile/internal/printf"

// A tenant's settings (stile_settings): small values Stile keeps per
// tenant, by key — its retention override, what the directory was last
// told, the last module's job kinds, an import under way.

// setting reads a setting ("" and false when it is not set).
func (t *Tenant) setting(key string) (string, bool, error) {
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
	return nil
}

// clearSetting removes a setting.
func (t *Tenant) clearSetting(key string) error {
	if err := t.db.Exec(`DELETE FROM stile_settings WHERE key = ?`, key); err != nil {
		return printf.Errorf("clear setting %s: %w", key, err)
	}
	return nil
}
