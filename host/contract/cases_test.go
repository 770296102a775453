package contract_test

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tp is the W3C specification's example traceparent.
const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// cases is the contract: every host must answer each the same.
var cases = []contractCase{
	{"savepoints", func(t *testing.T, tg *target, tenant string) {
		got := tg.ok(t, tenant, "savepoints", "", "")
		require.Equal(t, map[string]any{
			"inner":   "inner body failed", // rolled back b only
			"deepest": "inner body failed", // rolled back e only, two levels down
			"kept":    "",                  // the outer commit kept a, c, d
			"dropped": "outer body failed", // f and the committed inner g went with it
			"keys":    []any{"a", "c", "d"},
			"error":   "",
		}, got)
	}},

	{"trap", func(t *testing.T, tg *target, tenant string) {
		require.Equal(t, "", tg.ok(t, tenant, "put", "k=before", "")["error"])
		require.Equal(t, float64(2), tg.ok(t, tenant, "instance", "", "")["calls"])
		r := tg.call(t, tenant, "trap", "n=3", "", nil)
		require.Equal(t, 500, r.status, r.raw)
		require.Equal(t, "internal", r.body["code"], r.raw)
		require.Contains(t, r.body["message"], "trapped", r.raw)
		require.Equal(t, float64(1), tg.ok(t, tenant, "instance", "", "")["calls"], "the next request gets a fresh instance")
		require.Equal(t, []any{"before"}, tg.ok(t, tenant, "rows", "", "")["keys"], "the data is as before the transaction")
		if tg.manager != nil {
			require.Equal(t, int64(1), tg.manager.Restarts(tenant))
		}
	}},

	{"params", func(t *testing.T, tg *target, tenant string) {
		require.Equal(t, map[string]any{"guest": "", "host": ""}, tg.ok(t, tenant, "params", "n=100", ""))
		require.Equal(t, map[string]any{
			"guest": "value codec: 101 parameters exceed 100", // the guest's codec, before any host
			"host":  "too many SQL variables at offset 313: SQLITE_ERROR",
		}, tg.ok(t, tenant, "params", "n=101", ""))
	}},

	{"statement-length", func(t *testing.T, tg *target, tenant string) {
		require.Equal(t, map[string]any{"bytes": float64(100_000), "v": float64(1), "error": ""},
			tg.ok(t, tenant, "statement", "n=100000", ""))
		require.Equal(t, map[string]any{"bytes": float64(100_001), "v": float64(0), "error": "statement too long: SQLITE_TOOBIG"},
			tg.ok(t, tenant, "statement", "n=100001", ""))
	}},

	{"value-size", func(t *testing.T, tg *target, tenant string) {
		for _, kind := range []string{"blob", "text"} {
			require.Equal(t, map[string]any{"length": float64(2_000_000), "type": kind, "same": true, "error": ""},
				tg.ok(t, tenant, "value", "n=2000000&kind="+kind, ""), kind)
			require.Equal(t, map[string]any{"error": "parameter 1: value codec: " + kind + " of 2000001 bytes exceeds 2000000"},
				tg.ok(t, tenant, "value", "n=2000001&kind="+kind, ""), kind)
		}
	}},

	{"integers", func(t *testing.T, tg *target, tenant string) {
		notInt := "real 9007199254740992; Int: value codec: column 0 is real, not integer"
		require.Equal(t, map[string]any{
			"max":        "integer 9007199254740991; Int: 9007199254740991",
			"min":        "integer -9007199254740991; Int: -9007199254740991",
			"bind_2^53":  "parameter 1: value codec: integer 9007199254740992 is outside ±(2^53-1)",
			"raw_2^53":   "value codec: integer 9007199254740992 is outside ±(2^53-1)", // the host's decoder
			"sql_2^53":   notInt,                                                       // a JS number, as the Durable Object returns it
			"sql_2^53+1": notInt,                                                       // rounded to 2^53 on the way
		}, tg.ok(t, tenant, "integers", "", ""))
	}},

	{"refusals", func(t *testing.T, tg *target, tenant string) {
		for _, sql := range []string{"BEGIN", "SAVEPOINT sp", "COMMIT", "PRAGMA journal_mode", "ATTACH ':memory:' AS x"} {
			want := measuredRefusal(t, sql)
			require.Equal(t, want, tg.ok(t, tenant, "refuse", "", sql)["error"], sql)
			require.Equal(t, want, tg.ok(t, tenant, "refuse", "in=tx", sql)["error"], sql+" inside a transaction")
		}
	}},

	{"alarm", func(t *testing.T, tg *target, tenant string) {
		at := int64(tg.ok(t, tenant, "alarm", "in=1000", "")["at"].(float64))
		tg.ok(t, tenant, "alarm", "keep", "") // AlarmUnchanged
		if tg.manager != nil {
			require.Equal(t, at, tg.manager.AlarmAt(tenant), "AlarmUnchanged kept the alarm")
		}
		tg.advance(time.Second)
		var fired []any
		eventually(t, tg, func() bool {
			fired = tg.ok(t, tenant, "fired", "", "")["fired"].([]any)
			return len(fired) == 1
		}, "the host sent one KindAlarm request")
		require.GreaterOrEqual(t, int64(fired[0].(float64)), at, "not before its time")
		if tg.manager != nil {
			require.Equal(t, at, int64(fired[0].(float64)), "at its time on the controlled clock")
			require.Equal(t, int64(0), tg.manager.AlarmAt(tenant), "the alarm's answer 0 cleared it")
		}

		tg.ok(t, tenant, "alarm", "in=1000", "")
		tg.ok(t, tenant, "alarm", "clear", "") // 0
		if tg.manager != nil {
			require.Equal(t, int64(0), tg.manager.AlarmAt(tenant))
		}
		tg.advance(2 * time.Second)
		require.Len(t, tg.ok(t, tenant, "fired", "", "")["fired"], 1, "a cleared alarm does not fire")
	}},

	{"headers", func(t *testing.T, tg *target, tenant string) {
		r := tg.call(t, tenant, "headers", "", "", map[string]string{
			"Traceparent":     tp,
			"Stile-Principal": "mallory", // a client's reserved header never crosses
			"Stile-Route":     "/forged",
			"X-Custom":        "1", // nor does anything else of the client's
			"Stile-Tenant":    "someone-else",
			"Stile-Executor":  "forged",
		})
		require.Equal(t, 200, r.status, r.raw)
		hs, _ := r.body["headers"].([]any)
		if tg.wasm {
			// The wasm hosts name the module's version: a hash of its bytes.
			require.Greater(t, len(hs), 1)
			second, _ := hs[1].([]any)
			require.Len(t, second, 2)
			require.Equal(t, "stile-module", second[0])
			require.Regexp(t, `^[0-9a-f]{12}$`, second[1])
			hs = slices.Delete(hs, 1, 2)
		}
		// Every host counts the object's calls for the tenant's usage: its
		// instance, then one request (this one, counted as it starts), no
		// alarm, and the rows and time of the calls that ended.
		r.body["headers"] = withoutUsage(t, hs, 1)
		require.Equal(t, []any{[]any{"stile-create", "writer"}, []any{"stile-principal", "admin"}, []any{"stile-tenant", tenant}, []any{"stile-token-id", "secret"}, []any{"traceparent", tp}}, r.body["headers"],
			"the module sees the caller's traceparent, the host's principal, the tenant the object is and which writes create a tenant (no executor: none configured)")
		require.Equal(t, "GET, POST", r.header.Get("Allow"), "a response header reaches HTTP")
		require.Equal(t, tp, r.header.Get("Echo-Traceparent"))
		require.Equal(t, "admin", r.header.Get("Echo-Stile-Principal"))
		require.Empty(t, r.header.Values("Stile-Route"), "stile- response headers are the host's")
		require.Equal(t, "application/json", r.header.Get("Content-Type"))

		for _, bad := range []string{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
			r = tg.call(t, tenant, "headers", "", "", map[string]string{"Traceparent": bad})
			hs, _ := r.body["headers"].([]any)
			if tg.wasm && len(hs) > 1 {
				hs = slices.Delete(hs, 1, 2)
			}
			r.body["headers"] = withoutUsage(t, hs, 0)
			require.Equal(t, []any{[]any{"stile-create", "writer"}, []any{"stile-principal", "admin"}, []any{"stile-tenant", tenant}, []any{"stile-token-id", "secret"}}, r.body["headers"], "a malformed traceparent is dropped: %s", bad)
		}
	}},
}

// withoutUsage checks the stile-usage header among hs, which counts
// requests (requests 0: any number) and no alarm, and returns the others.
func withoutUsage(t *testing.T, hs []any, requests int) []any {
	t.Helper()
	i := slices.IndexFunc(hs, func(h any) bool { p, _ := h.([]any); return len(p) == 2 && p[0] == "stile-usage" })
	require.GreaterOrEqual(t, i, 0, "the host sends stile-usage: %v", hs)
	count := `\d+`
	if requests > 0 {
		count = strconv.Itoa(requests)
	}
	require.Regexp(t, `^[0-9a-f]{16,32},`+count+`,0,\d+,\d+,\d+,(keep|tail)$`, hs[i].([]any)[1])
	return slices.Delete(hs, i, i+1)
}

// measuredRefusal is workerd's message for sql, as e2e/dosqlite measured
// it: the contract checks that it crosses the ABI unchanged.
func measuredRefusal(t *testing.T, sql string) string {
	t.Helper()
	measuredOnce.Do(func() {
		b, err := os.ReadFile("../../e2e/dosqlite/measured.json")
		if err == nil {
			err = json.Unmarshal(b, &measured)
		}
		measuredErr = err
	})
	require.NoError(t, measuredErr)
	for _, g := range measured.Groups {
		for _, p := range g.Probes {
			if p.SQL == sql && !p.OK && p.Error != nil {
				return p.Error.Message
			}
		}
	}
	t.Fatalf("e2e/dosqlite/measured.json has no refusal of %q", sql)
	return ""
}

var (
	measuredOnce sync.Once
	measuredErr  error
	measured     struct {
		Groups map[string]struct {
			Probes []struct {
				SQL   string `json:"sql"`
				OK    bool   `json:"ok"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"probes"`
		} `json:"groups"`
	}
)

// eventually asserts cond at once under a controlled clock, within a
// bounded poll in real time.
func eventually(t *testing.T, tg *target, cond func() bool, msg string) {
	t.Helper()
	if !tg.real {
		require.True(t, cond(), msg)
		return
	}
	require.Eventually(t, cond, 20*time.Second, 100*time.Millisecond, msg)
}
