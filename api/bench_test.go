package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stile-run/stile/api"
)

var benchAt = time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)

func benchJob() api.Job {
	later := benchAt.Add(time.Hour)
	return api.Job{ID: "12345", Kind: "email.welcome", Queue: "default", Priority: 2,
		Args: json.RawMessage(`{"user":"u-123","template":"welcome"}`), State: "running", Attempt: 2, Failures: 1,
		MaxAttempts: 20, LeaseMs: 60000, TimeoutMs: 1800000, RunAt: benchAt, CreatedAt: benchAt,
		Tags: []string{"signup", "email"}, Running: &api.Attempt{Attempt: 2, Worker: "host-1", ClaimedAt: benchAt, LeaseUntil: later}}
}

func benchEnqueue() api.EnqueueRequest {
	p := 3
	return api.EnqueueRequest{Kind: "email.welcome", Args: json.RawMessage(`{"user":"u-123","template":"welcome"}`),
		Queue: "email", Priority: &p, RunAt: &benchAt, MaxAttempts: 5, LeaseMs: 30000, Tags: []string{"signup"},
		UniqueKey: "welcome:u-123"}
}

// BenchmarkJobEncode writes a job, as GET /jobs/{id} answers.
func BenchmarkJobEncode(b *testing.B) {
	j := benchJob()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = j.AppendJSON(buf[:0])
	}
}

// BenchmarkEnqueueEncodeDecode writes an enqueue request and reads it
// back strictly, as a client and POST /jobs do.
func BenchmarkEnqueueEncodeDecode(b *testing.B) {
	e := benchEnqueue()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendJSON(buf[:0])
		if _, err := api.DecodeEnqueue(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueueDecode reads an enqueue request strictly.
func BenchmarkEnqueueDecode(b *testing.B) {
	buf := benchEnqueue().AppendJSON(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := api.DecodeEnqueue(buf); err != nil {
			b.Fatal(err)
		}
	}
}
