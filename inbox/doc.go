// Package inbox decides how events reach reactions, and who may settle
// them.
//
// A reaction (a policy or a process) runs outside the tenant, at least
// once. Before it runs, the runtime claims the pair (handler, event) in
// the inbox ledger; what the ledger holds for the pair decides what a
// second delivery does:
//
//   - succeeded: never run again;
//   - pending inside its lease: another claim is running it, and the
//     handler's later events wait behind it (no overtaking);
//   - pending with the lease run out, or ready: run again under a new
//     claim id;
//   - retry (failed, or delayed by the handler): run again at its run_at.
//
// A settlement names the claim id it was given. The claim id is replaced
// when the delivery is taken over, so a stalled attempt's settlement finds
// its id gone and writes nothing (an *api.Error with a stale code: errors.Is(err, api.ErrStale)).
//
// Every delivery carries an idempotency key derived from (tenant, handler,
// event), identical on every retry, for the provider's side: KeyFor
// derives one key per effect, CommandID one id per dispatched command.
//
// Like package fence, it is pure: time and ids come in as values.
//
// runtime/internal/inboxstore persists its decisions; the worker library
// uses KeyFor and CommandID to derive a delivery's keys.
package inbox
