package api

import (
	"bytes"
	"encoding/json"

	"github.com/stile-run/stile/internal/printf"
)

// JobArgs is a job kind's arguments as a Go type, the convention River's
// users know: Kind names the kind, and the value, as JSON, is the job's
// args. Kind must answer on the type's zero value (a struct type whose Kind
// has a value receiver), since the kind is read before any args exist:
//
//	type Receipt struct {
//		Order string `json:"order"`
//	}
//
//	func (Receipt) Kind() string { return "order.receipt" }
//
// The module registers the kind with runtime.RegisterJobArgs, a client
// enqueues with EnqueueOf (or client.Tenant.EnqueueArgs), a transaction or
// a decision with their EnqueueArgs, and a handler receives the decoded
// value (worker.Handle). The JSON is what an untyped call sends, so typed
// and untyped calls take each other's jobs.
type JobArgs interface{ Kind() string }

// ArgsValidator is JobArgs that check themselves. A kind registered with
// runtime.RegisterJobArgs refuses an enqueue whose args decode but whose
// Validate fails: 400 invalid_args, with Validate's message.
type ArgsValidator interface{ Validate() error }

// EnqueueOf is the request that enqueues args: their kind and their JSON,
// with the options set in opts (its Kind and Args must be empty: the args
// name the kind and are the args).
func EnqueueOf(args JobArgs, opts EnqueueRequest) (EnqueueRequest, error) {
	if args == nil {
		return EnqueueRequest{}, printf.Errorf("enqueue: no job args (a nil JobArgs)")
	}
	kind := args.Kind()
	if opts.Kind != "" || len(opts.Args) > 0 {
		return EnqueueRequest{}, printf.Errorf("enqueue %s: the options name kind %q and %d bytes of args; the %T value is both", kind, opts.Kind, len(opts.Args), args)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return EnqueueRequest{}, printf.Errorf("enqueue %s: encode the %T args: %w", kind, args, err)
	}
	opts.Kind, opts.Args = kind, b
	return opts, nil
}

// DecodeArgs decodes a job's args into a T, as encoding/json does: fields
// T does not have are ignored (a module or handler that reads an older
// shape of the args takes a newer writer's jobs), and absent or null args
// are T's zero value. The error names the kind and what did not fit.
func DecodeArgs[T JobArgs](args json.RawMessage) (T, error) {
	var v T
	if err := unmarshalData(args, &v); err != nil {
		return v, printf.Errorf("args of job kind %s do not decode into %T: %w", v.Kind(), v, err)
	}
	return v, nil
}

// unmarshalData decodes the data of a job, an event or a command into v
// as encoding/json does, but for absent or null data, which leaves v as it
// is (the zero value).
func unmarshalData(data json.RawMessage, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return json.Unmarshal(data, v)
}
