package projection_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/projection"
)

var names = map[string]string{"orders": "p_sales_1_orders", "totals": "p_sales_1_totals", "by_day": "p_sales_1_by_day"}

func TestChecksAllowWhatAProjectionWrites(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		`INSERT INTO {orders} (id, total) VALUES (?, ?)`:                                        `INSERT INTO p_sales_1_orders (id, total) VALUES (?, ?)`,
		`INSERT OR REPLACE INTO {orders} VALUES (?1, ?2)`:                                       `INSERT OR REPLACE INTO p_sales_1_orders VALUES (?1, ?2)`,
		`INSERT INTO {totals} (day, n) VALUES (?, 1) ON CONFLICT (day) DO UPDATE SET n = n + 1`: `INSERT INTO p_sales_1_totals (day, n) VALUES (?, 1) ON CONFLICT (day) DO UPDATE SET n = n + 1`,
		`UPDATE {orders} SET total = total + ? WHERE id = ?`:                                    `UPDATE p_sales_1_orders SET total = total + ? WHERE id = ?`,
		`UPDATE OR IGNORE {orders} SET total = 0`:                                               `UPDATE OR IGNORE p_sales_1_orders SET total = 0`,
		`DELETE FROM {orders} WHERE id IN (SELECT id FROM {totals})`:                            `DELETE FROM p_sales_1_orders WHERE id IN (SELECT id FROM p_sales_1_totals)`,
		`SELECT o.id FROM {orders} o JOIN {totals} t ON t.day = o.day, {by_day} AS d WHERE 1`:   `SELECT o.id FROM p_sales_1_orders o JOIN p_sales_1_totals t ON t.day = o.day, p_sales_1_by_day AS d WHERE 1`,
		`SELECT value FROM {orders}, json_each({orders}.tags) WHERE id = ?`:                     `SELECT value FROM p_sales_1_orders, json_each(p_sales_1_orders.tags) WHERE id = ?`,
		`SELECT count(*) FROM (SELECT id FROM {orders}) s, {totals}`:                            `SELECT count(*) FROM (SELECT id FROM p_sales_1_orders) s, p_sales_1_totals`,
		`SELECT 'FROM stile_jobs' AS note, "from" FROM {orders} -- FROM stile_jobs`:             `SELECT 'FROM stile_jobs' AS note, "from" FROM p_sales_1_orders -- FROM stile_jobs`,
		`SELECT a IS NOT DISTINCT FROM b FROM {orders}`:                                         `SELECT a IS NOT DISTINCT FROM b FROM p_sales_1_orders`,
		`REPLACE INTO {orders} SELECT * FROM {totals}`:                                          `REPLACE INTO p_sales_1_orders SELECT * FROM p_sales_1_totals`,
		`SELECT * FROM ({orders} JOIN {totals} ON 1), {by_day}`:                                 `SELECT * FROM (p_sales_1_orders JOIN p_sales_1_totals ON 1), p_sales_1_by_day`,
		`SELECT * FROM {orders} JOIN {totals} USING (id), {by_day} WHERE 1`:                     `SELECT * FROM p_sales_1_orders JOIN p_sales_1_totals USING (id), p_sales_1_by_day WHERE 1`,
		`SELECT p_value FROM {orders} WHERE id IN {totals} OR id IN json_each(?)`:               `SELECT p_value FROM p_sales_1_orders WHERE id IN p_sales_1_totals OR id IN json_each(?)`,
		`SELECT * FROM ((SELECT id FROM {orders}))`:                                             `SELECT * FROM ((SELECT id FROM p_sales_1_orders))`,
	} {
		got, err := projection.Check(sql, projection.Write, names)
		require.NoError(t, err, sql)
		require.Equal(t, want, got)
	}
}

func TestChecksRefuseOtherTables(t *testing.T) {
	t.Parallel()
	for sql, msg := range map[string]string{
		`INSERT INTO stile_jobs (kind) VALUES ('x')`:                       `stile_jobs`,
		`DELETE FROM stile_events`:                                         `stile_events`,
		`UPDATE accounts SET x = 1`:                                        `"accounts" after UPDATE`,
		`SELECT * FROM {orders}, stile_jobs`:                               `stile_jobs`,
		`SELECT * FROM {orders} JOIN p_other_1_t ON 1`:                     `p_other_1_t`,
		`SELECT * FROM {orders} WHERE id IN (SELECT id FROM jobs)`:         `"jobs" after FROM`,
		`INSERT INTO "stile_jobs" VALUES (1)`:                              `after INTO`,
		`INSERT INTO [stile_jobs] VALUES (1)`:                              `after INTO`,
		`SELECT * FROM pragma_table_info('x')`:                             `pragma_table_info is not allowed`,
		`SELECT * FROM dbstat('main')`:                                     `dbstat is not allowed`,
		`SELECT * FROM (accounts)`:                                         `"accounts" after FROM`,
		`SELECT * FROM (stile_events)`:                                     `stile_events`,
		`INSERT INTO {orders} SELECT seq, data FROM (stile_events)`:        `stile_events`,
		`SELECT * FROM {orders} JOIN {totals} ON 1, accounts`:              `"accounts" after ,`,
		`SELECT * FROM {orders} JOIN {totals} USING (id), jobs`:            `"jobs" after ,`,
		`SELECT 1 FROM {orders} WHERE id IN accounts`:                      `"accounts" after IN`,
		`SELECT * FROM {orders} NATURAL JOIN (accounts)`:                   `"accounts" after JOIN`,
		`SELECT * FROM ({orders} JOIN {totals} ON 1, accounts)`:            `"accounts" after ,`,
		`SELECT "stile_jobs".kind FROM {orders}`:                           `stile_jobs`,
		`SELECT * FROM {orders} WHERE x = (SELECT sql FROM sqlite_schema)`: `sqlite_schema`,
		`SELECT * FROM {orders} WHERE x IN (SELECT n FROM p_other_2_t)`:    `p_other_2_t`,
		`SELECT * FROM _cf_KV`:                                             `_cf_KV`,
		`INSERT INTO {nope} VALUES (1)`:                                    `{nope} is not one of this projection's tables`,
		`DROP TABLE {orders}`:                                              `not DROP`,
		`CREATE TABLE {orders} (x)`:                                        `not CREATE`,
		`PRAGMA writable_schema = 1`:                                       `not PRAGMA`,
		`ATTACH 'x' AS y`:                                                  `not ATTACH`,
		`WITH x AS (SELECT 1) SELECT * FROM x`:                             `common table expressions`,
		`DELETE FROM {orders}; DELETE FROM stile_jobs`:                     `one statement at a time`,
		`SELECT 'unterminated FROM {orders}`:                               `unterminated ' quote`,
		``:                                                                 `empty`,
	} {
		_, err := projection.Check(sql, projection.Write, names)
		require.Error(t, err, sql)
		require.True(t, errors.Is(err, projection.ErrRefused), sql)
		require.Contains(t, err.Error(), msg, sql)
		require.NotContains(t, err.Error(), "\n")
	}
}

func TestReadAndSchemaKinds(t *testing.T) {
	t.Parallel()
	_, err := projection.Check(`SELECT id FROM {orders} WHERE id = :id`, projection.Read, names)
	require.NoError(t, err)
	_, err = projection.Check(`DELETE FROM {orders}`, projection.Read, names)
	require.ErrorContains(t, err, "a query must be a SELECT")

	for sql, want := range map[string]string{
		`CREATE TABLE {orders} (id TEXT PRIMARY KEY, total INTEGER NOT NULL) STRICT`: `CREATE TABLE p_sales_1_orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL) STRICT`,
		`CREATE UNIQUE INDEX IF NOT EXISTS {by_day} ON {orders} (day)`:               `CREATE UNIQUE INDEX IF NOT EXISTS p_sales_1_by_day ON p_sales_1_orders (day)`,
		`CREATE TABLE {totals} (day TEXT REFERENCES {orders} (id))`:                  `CREATE TABLE p_sales_1_totals (day TEXT REFERENCES p_sales_1_orders (id))`,
		`CREATE TABLE {orders} (a INT, b INT AS (a * 2))`:                            `CREATE TABLE p_sales_1_orders (a INT, b INT AS (a * 2))`,
	} {
		got, err := projection.Check(sql, projection.Schema, names)
		require.NoError(t, err, sql)
		require.Equal(t, want, got)
	}
	for _, sql := range []string{`CREATE TABLE orders (x)`, `CREATE INDEX {by_day} ON orders (x)`, `DROP TABLE {orders}`,
		`CREATE TABLE {orders} AS SELECT * FROM stile_jobs`, `CREATE TABLE {orders} (x REFERENCES stile_jobs (id))`,
		`CREATE VIEW {orders} AS SELECT 1`, `CREATE TABLE {orders} AS VALUES (1)`,
		`CREATE TABLE {orders} AS WITH x AS (SELECT * FROM stile_events) SELECT * FROM x`,
		`CREATE TABLE {orders} (x DEFAULT (1), y AS (x)) WITHOUT ROWID, "stile_jobs"`} {
		_, err := projection.Check(sql, projection.Schema, names)
		require.Error(t, err, sql)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, projection.Physical("ab", 1, "x_2_t"), projection.Physical("ab_1_x", 2, "t"), "why MayCollide exists")
	for a, b := range map[string]string{"ab": "ab_1_x", "sales_2024_q1": "sales", "a": "a_0_b"} {
		require.True(t, projection.MayCollide(a, b), "%s %s", a, b)
	}
	for _, pair := range [][2]string{{"ab", "abc"}, {"ab", "ab_x_1"}, {"sales", "sales_2024"}, {"a", "a_"}, {"x", "x_1"}} {
		require.False(t, projection.MayCollide(pair[0], pair[1]), "%v", pair)
	}
	require.Equal(t, "p_sales_3_orders", projection.Physical("sales", 3, "orders"))
	for _, ok := range []string{"a", "orders", "by_day_2", strings.Repeat("a", 32)} {
		require.True(t, projection.ValidName(ok), ok)
	}
	for _, bad := range []string{"", "A", "1a", "_a", "a-b", "a.b", strings.Repeat("a", 33)} {
		require.False(t, projection.ValidName(bad), bad)
	}
}

// Whatever Check accepts names only the projection's physical tables in
// table positions: fed back through Check with the physical names as the
// only words allowed, nothing else may stand after FROM, JOIN, INTO or
// UPDATE.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`INSERT INTO {orders} VALUES (1)`, `SELECT * FROM {orders} o, {totals}`,
		`DELETE FROM {orders} WHERE id IN (SELECT id FROM {totals})`, `UPDATE {orders} SET a = 1`,
		`SELECT * FROM stile_jobs`, `SELECT "x" FROM {orders} -- y`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		out, err := projection.Check(sql, projection.Write, names)
		if err != nil {
			require.True(t, errors.Is(err, projection.ErrRefused))
			return
		}
		require.NotContains(t, out, "{orders}")
		lower := strings.ToLower(out)
		for _, forbidden := range []string{"from stile_", "into stile_", "update stile_", "join stile_"} {
			require.NotContains(t, lower, forbidden, "accepted %q", sql)
		}
	})
}
