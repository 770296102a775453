package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

// ProbeTenant is the tenant name Registrations gives its instance.
const ProbeTenant = "stile-probe"

// Registrations asks the module f opens what it registers (api.Status's
// Kinds and Reactions), from an instance of its own over an in-memory
// database: no tenant is created, nothing is written to disk, and no
// Manager hears of it.
func Registrations(ctx context.Context, f Factory) (api.Status, error) {
	e, err := f.Open(ctx, ProbeTenant, ":memory:", RealClock{})
	if err != nil {
		return api.Status{}, fmt.Errorf("ask the module what it registers: %w", err)
	}
	defer e.Close()
	// The instance's tenant is created first (in memory), as any other.
	var resp do.Response
	for _, r := range []api.Route{api.RouteCreateTenant, api.RouteStatus} {
		frame := do.AppendRequest(nil, do.Request{Kind: do.KindAPI, Method: r.Method, Path: r.Path(ProbeTenant),
			Headers: do.Headers{{Name: do.HeaderTenant, Value: ProbeTenant}, {Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}}})
		out, err := e.Handle(ctx, frame)
		if err != nil {
			return api.Status{}, fmt.Errorf("ask the module what it registers: %w", err)
		}
		if resp, err = do.DecodeResponse(out); err != nil {
			return api.Status{}, fmt.Errorf("ask the module what it registers: %w", err)
		}
		if resp.Status >= 300 {
			return api.Status{}, fmt.Errorf("ask the module what it registers: %s answered %d %.500s", r, resp.Status, resp.Body)
		}
	}
	var st api.Status
	if err := json.Unmarshal(resp.Body, &st); err != nil {
		return api.Status{}, fmt.Errorf("ask the module what it registers: its status is unreadable: %w", err)
	}
	return st, nil
}
