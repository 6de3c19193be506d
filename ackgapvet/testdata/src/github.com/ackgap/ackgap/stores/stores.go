// Package stores is a stub of ackgap's stores package.
package stores

type TransitionParams struct {
	Table, Key, To string
	From           []string
}

type TransitionResult struct{ Found bool }

func (r *TransitionResult) Applied() bool { return true }
func (r *TransitionResult) Err() error    { return nil }

type OutboxInsertParams struct {
	Topic, Key string
	Payload    []byte
}
