// Package worker runs job handlers for Stile tenants from any Go process.
//
// A Worker claims jobs over HTTP (long-polling, so an idle worker neither
// spins nor adds latency), runs the handler registered for each job's
// kind with a context.Context, heartbeats while it runs, and reports the
// outcome. The handler's context is cancelled when a heartbeat answers
// that the lease is lost, or when the lease deadline passes without a
// successful heartbeat: from then on the store will refuse the report
// anyway (see package fence).
//
// Handler bodies run at least once: a job whose worker stalls is claimed
// again. Key side effects on JobContext.JobID, which is the same for every
// attempt of a job. Users' worker programs and `stile work` import it;
// never the tenant module.
package worker
