package storekit

import (
	"errors"
	"fmt"

	"github.com/ackgap/ackgap"
)

// Classes tells [ClassifyError] what a driver's error means. Each func
// reports whether err (not nil, not yet classified) is of its class; they
// are tried in field order. A nil func matches nothing.
type Classes struct {
	// Misconfigured: the database is not set up for this code (a missing
	// table or column, schema or grant: a deploy mistake).
	Misconfigured func(err error) bool
	// Unavailable: the database is busy or unreachable.
	Unavailable func(err error) bool
	// InvalidData: the database refused the data itself.
	InvalidData func(err error) bool
}

// ClassifyError is [stores.Store.ClassifyError] for a store
// whose driver errors c sorts, with name (the store's package name) at the
// head of each message. nil, permanent errors and errors already wrapping
// ackgap.ErrStoreUnavailable are returned as they are. Misconfigured:
// wraps ackgap.ErrStoreUnavailable and ackgap.ErrStoreMisconfigured
// (redelivered, never dead-lettered). Unavailable: wraps
// ackgap.ErrStoreUnavailable. InvalidData: a permanent error, reason
// ackgap.ReasonInvalidData, wrapping ackgap.ErrInvalidData. Anything else
// is returned unchanged. docs/errors.md lists the codes of ackgap's stores.
func ClassifyError(name string, c Classes, err error) error {
	is := func(f func(error) bool) bool { return f != nil && f(err) }
	switch {
	case err == nil, ackgap.IsPermanent(err), errors.Is(err, ackgap.ErrStoreUnavailable):
		return err
	case is(c.Misconfigured):
		return Misconfigured(name, err)
	case is(c.Unavailable):
		return fmt.Errorf("%s: %w: %w", name, ackgap.ErrStoreUnavailable, err)
	case is(c.InvalidData):
		return ackgap.Permanent(ackgap.ReasonInvalidData, fmt.Errorf("%s: %w: %w", name, ackgap.ErrInvalidData, err))
	}
	return err
}

// Misconfigured wraps err, a driver error that says the database is not
// set up for the code (a missing table, column, database or grant), as
// ackgap.ErrStoreUnavailable and ackgap.ErrStoreMisconfigured both
// (errors.Is matches each, and err), so the message is redelivered, never
// dead-lettered. Its text is prefix, ErrStoreMisconfigured's text and
// err's, once each (an err already classified so keeps its one): "mysqlstore: claim outbox: ackgap: database not set up
// for this code (...): Error 1045 ...".
func Misconfigured(prefix string, err error) error {
	if errors.Is(err, ackgap.ErrStoreMisconfigured) {
		// Classified below already (a commit over a failed statement).
		return &misconfiguredError{msg: prefix + ": " + err.Error(), errs: []error{ackgap.ErrStoreUnavailable, ackgap.ErrStoreMisconfigured, err}}
	}
	return &misconfiguredError{
		msg:  prefix + ": " + ackgap.ErrStoreMisconfigured.Error() + ": " + err.Error(),
		errs: []error{ackgap.ErrStoreUnavailable, ackgap.ErrStoreMisconfigured, err},
	}
}

type misconfiguredError struct {
	msg  string
	errs []error
}

func (e *misconfiguredError) Error() string   { return e.msg }
func (e *misconfiguredError) Unwrap() []error { return e.errs }
