package runtime

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// rateView is a rate key as the API shows it at now.
func rateView(r fencestore.Rate, now int64) api.Rate {
	v := api.Rate{Key: r.Key, Limit: r.Limit, PeriodMs: r.PeriodMs, Source: r.Source,
		InWindow: flow.InWindow(r.Window, r.Rate, now), Started: r.Started, Limited: r.Limited}
	if open := flow.Next(r.Window, r.Rate, now); open > now {
		v.OpenAt = tsPtr(open)
	}
	return v
}

func (t *Tenant) rates() route {
	return func(now int64) (result, error) {
		rs, err := t.store.ListRates()
		if err != nil {
			return result{}, err
		}
		resp := api.RatesResponse{Rates: make([]api.Rate, len(rs))}
		for i, r := range rs {
			resp.Rates[i] = rateView(r, now)
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

func (t *Tenant) getRate(key string) (route, *api.Error) {
	if !api.ValidName(key) {
		return nil, api.Refuse(api.CodeInvalidRequest, "rate key %q is invalid: use %s", key, api.NameRule)
	}
	return func(now int64) (result, error) {
		r, ok, err := t.store.GetRate(key)
		if err != nil {
			return result{}, err
		}
		if !ok {
			if d, declared := t.app.rates[key]; declared {
				// Declared by the module, not used by the tenant yet.
				r = fencestore.Rate{Key: key, Rate: d, Source: fencestore.RateFromModule}
			} else {
				return result{}, api.Refuse(api.CodeNotFound, "rate key %q has no limit: set one with PUT /v1/t/%s/rates/%s", key, t.name, key)
			}
		}
		return result{status: statusOK, body: rateView(r, now).AppendJSON}, nil
	}, nil
}

func (t *Tenant) setRate(key string, body []byte) (route, *api.Error) {
	if !api.ValidName(key) {
		return nil, api.Refuse(api.CodeInvalidRequest, "rate key %q is invalid: use %s", key, api.NameRule)
	}
	r, err := api.DecodeSetRate(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if r.Limit == nil || r.PeriodMs == nil {
		return nil, api.Refuse(api.CodeInvalidRequest, `rate key %q: both "limit" (starts) and "period_ms" (the window) are required, e.g. {"limit": 200, "period_ms": 1000}`, key)
	}
	rate := flow.Rate{Limit: *r.Limit, PeriodMs: *r.PeriodMs}
	if p := rate.Problem(); p != "" {
		return nil, api.Refuse(api.CodeInvalidRequest, "rate key %q: %s", key, p)
	}
	return func(now int64) (result, error) {
		rt, err := t.store.SetRate(now, key, rate, fencestore.RateFromTenant)
		if err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: rateView(rt, now).AppendJSON}, nil
	}, nil
}

func (t *Tenant) deleteRate(key string) (route, *api.Error) {
	if !api.ValidName(key) {
		return nil, api.Refuse(api.CodeInvalidRequest, "rate key %q is invalid: use %s", key, api.NameRule)
	}
	return func(now int64) (result, error) {
		rt, removed, err := t.store.DeleteRate(now, key)
		if err != nil {
			return result{}, err
		}
		if removed {
			return result{status: statusNoContent}, nil
		}
		return result{status: statusOK, body: rateView(rt, now).AppendJSON}, nil
	}, nil
}
