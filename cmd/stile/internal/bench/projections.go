package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
)

// FillEvents appends n events of type typ to the tenant's log in dataDir
// in one statement, spread over 100 streams (through the API a million
// events would take minutes). The tenant must exist already.
func FillEvents(dataDir, tenant string, n int, typ string) error {
	db, err := dosql.Open(filepath.Join(dataDir, "tenants", tenant+".sqlite"))
	if err != nil {
		return err
	}
	defer db.Close()
	params, err := do.EncodeParams(nil, n, typ)
	if err != nil {
		return err
	}
	_, err = db.Query(`WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ?1 - 1)
		INSERT INTO stile_events (stream, version, type, data, at)
		SELECT 'bench-' || (i % 100), (SELECT COALESCE(MAX(seq), 0) FROM stile_events) + i + 1, ?2, '{"n":1}', 1700000000000 + i
		FROM seq`, params)
	if err != nil {
		return fmt.Errorf("fill %d events: %w", n, err)
	}
	// The live generations are moved to the head as if they had applied
	// the events (their rows do not show them): only the rebuild that is
	// measured applies them.
	none, _ := do.EncodeParams(nil)
	if _, err := db.Query(`UPDATE stile_projection_generations SET checkpoint = (SELECT MAX(seq) FROM stile_events)
		WHERE role = 'live'`, none); err != nil {
		return fmt.Errorf("move live projections to the head: %w", err)
	}
	return nil
}

// Rebuild rebuilds a projection and returns the time until its new
// generation is live and at the head. fire runs the tenant's due alarms
// and says how many ran (in-process hosts: the status, whose lag counts
// cost time of their own, is read once the alarms stop); with fire nil
// the host's alarm fires by itself and the status is polled.
func Rebuild(ctx context.Context, d Driver, projection string, fire func() int) (time.Duration, error) {
	start := time.Now()
	if err := call(ctx, d, api.RouteRebuild, nil, nil, 202, projection); err != nil {
		return 0, err
	}
	for {
		if fire != nil {
			for fire() > 0 {
			}
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(start)
		var st api.ProjectionsResponse
		if err := call(ctx, d, api.RouteProjections, nil, &st, 200); err != nil {
			return 0, err
		}
		for _, p := range st.Projections {
			if p.Name != projection {
				continue
			}
			if p.Rebuild == nil && p.Live != nil && p.Live.Status == "current" {
				return took, nil
			}
			if g := p.Rebuild; g != nil && g.Status == "stalled" {
				return 0, fmt.Errorf("rebuild of %s stalled: %s", projection, g.Error)
			}
		}
		if fire != nil {
			return 0, fmt.Errorf("rebuild of %s: no alarm is due, and it is not done", projection)
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}
