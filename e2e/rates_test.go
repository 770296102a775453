package e2e_test

import (
	"net/http"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// ratePeriod is the scenario's window: long enough that two claims a
// real-time host answers in a row fall in one window.
const ratePeriod = 2 * time.Second

// scenarioRateLimits: a rate key lets no more jobs start per window than
// its limit, across claims; the jobs it holds back wait without spending
// attempts and say why; a held claim is woken when the key opens; the
// module's default applies until a tenant sets its own, and DELETE goes
// back to it; bad limits and unknown keys are refused and write nothing.
func scenarioRateLimits(s *scenario) {
	t := s.t
	_, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", RateKey: "nolimit"})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", RateKey: "bad key"})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	for _, body := range []string{`{"limit": 0, "period_ms": 1000}`, `{"limit": 5}`, `{"limit": 5, "period_ms": 86400001}`, `{"limit": "5"}`, `{`} {
		status, _, err := s.tg.client().Raw(s.ctx, "PUT", "/v1/t/"+s.ten.Name()+"/rates/api", []byte(body), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, body)
	}
	rates, err := s.ten.Rates(s.ctx)
	require.NoError(t, err)
	require.Empty(t, rates, "refused limits wrote nothing")

	r, err := s.ten.SetRate(s.ctx, "api", 2, ratePeriod)
	require.NoError(t, err)
	require.Equal(t, api.Rate{Key: "api", Limit: 2, PeriodMs: ratePeriod.Milliseconds(), Source: "tenant"}, r)
	var ids []string
	for range 5 {
		ids = append(ids, s.enqueue(api.EnqueueRequest{Kind: "test.fast", RateKey: "api"}).ID)
	}
	free := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	cs := s.claim("w", 10, 3)
	rated := 0
	for _, c := range cs {
		if c.ID != free.ID {
			rated++
		}
	}
	require.Equal(t, 2, rated, "no more starts than the limit; the unlimited job starts beside them")
	s.claim("w", 10, 0) // the key has no room

	r, err = s.ten.Rate(s.ctx, "api")
	require.NoError(t, err)
	require.EqualValues(t, 2, r.InWindow)
	require.EqualValues(t, 2, r.Started)
	require.EqualValues(t, 1, r.Limited, "jobs waited once")
	require.NotNil(t, r.OpenAt, "a key at its limit says when it opens")
	waiting := s.job(ids[4])
	require.Equal(t, api.JobState("available"), waiting.State)
	require.EqualValues(t, 0, waiting.Attempt, "a rate-limited job spends no attempt")
	require.Contains(t, waiting.Waiting, `rate limited by key "api"`)
	require.Equal(t, "api", waiting.RateKey)

	// Reports never give a start back: a failed attempt counts, and its
	// retry waits for room like any other start.
	for _, c := range cs {
		if c.ID != free.ID {
			s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "try again"})
		} else {
			s.complete(c, "w")
		}
	}
	s.claim("w", 10, 0)

	// A held claim wakes when the key opens (the alarm, at the time it
	// said), and takes as many as the limit allows.
	if !s.tg.realTime() {
		s.tg.advance(t, ratePeriod)
	}
	next := s.claim("w", 10, 2)
	for _, c := range next {
		s.complete(c, "w")
	}
	s.claim("w", 10, 0)
	_, _, err = s.ten.DeleteRate(s.ctx, "api")
	requireCode(t, err, http.StatusConflict, api.CodeRateKeyInUse)

	// A raised limit lets the waiting jobs start at once.
	_, err = s.ten.SetRate(s.ctx, "api", 100, ratePeriod)
	require.NoError(t, err)
	for _, c := range s.claim("w", 10, 3) { // the last job and the two retries
		s.complete(c, "w")
	}
	for _, id := range ids {
		require.Equal(t, api.JobState("completed"), s.job(id).State, id)
	}
	r, removed, err := s.ten.DeleteRate(s.ctx, "api")
	require.NoError(t, err)
	require.True(t, removed)
	require.Empty(t, r.Key)
	_, err = s.ten.Rate(s.ctx, "api")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)

	// The module's default, for its kind: one start an hour.
	x := s.enqueue(api.EnqueueRequest{Kind: "test.rated"})
	s.enqueue(api.EnqueueRequest{Kind: "test.rated"})
	require.Equal(t, "hourly", x.RateKey)
	got := s.claim("w", 10, 1)
	require.Equal(t, x.ID, got[0].ID)
	s.claim("w", 10, 0)
	r, err = s.ten.Rate(s.ctx, "hourly")
	require.NoError(t, err)
	require.Equal(t, "module", r.Source)
	_, err = s.ten.SetRate(s.ctx, "hourly", 2, time.Hour) // a tenant raises the module's default
	require.NoError(t, err)
	s.claim("w", 10, 1)
	r, removed, err = s.ten.DeleteRate(s.ctx, "hourly")
	require.NoError(t, err)
	require.False(t, removed, "a key the module declares goes back to its default")
	require.Equal(t, api.Rate{Key: "hourly", Limit: 1, PeriodMs: time.Hour.Milliseconds(), Source: "module", InWindow: 2,
		OpenAt: r.OpenAt, Started: 2, Limited: 1}, r)
	require.NotNil(t, r.OpenAt)
}
