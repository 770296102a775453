// Package receipt holds the typed job args the test module registers and
// the test handlers take: a package of its own, so that the edge
// executor's handlers import the type without the module.
package receipt

import "errors"

// Receipt is the args of a test.receipt job: the test module registers the
// kind with runtime.RegisterJobArgs, so an enqueue's args must decode into
// it and pass Validate.
type Receipt struct {
	Order string `json:"order"`
	Cents int64  `json:"cents"`
}

// Kind implements api.JobArgs.
func (Receipt) Kind() string { return "test.receipt" }

// Validate implements api.ArgsValidator.
func (r Receipt) Validate() error {
	switch {
	case r.Order == "":
		return errors.New(`a receipt names its order ("order")`)
	case r.Cents < 0:
		return errors.New(`a receipt's "cents" is not negative`)
	}
	return nil
}

// Echo reads a test.echo job's args as typed args. The module registers
// test.echo untyped (any args), so a typed handler of it meets args that
// do not decode.
type Echo struct {
	N int `json:"n"`
}

// Kind implements api.JobArgs.
func (Echo) Kind() string { return "test.echo" }
