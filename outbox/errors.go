package outbox

import (
	"errors"
	"fmt"
	"time"
)

// ErrAlreadyRunning is returned by [Relay.Run] when the relay is running
// already. Run several relays, not one relay several times.
var ErrAlreadyRunning = errors.New("outbox: relay is already running")

// ErrAttemptsExhausted is wrapped by the last error of a row that the relay
// marked dead because it was claimed more than Config.MaxAttempts times
// without an outcome being recorded (relays crashed or stopped mid-effect,
// or could not record). Such a row is dead without its effect being called
// again: it may be what crashes the relay.
var ErrAttemptsExhausted = errors.New("outbox: attempts exhausted")

// RetryAfterError asks the relay to try the row again no sooner than Delay
// from now: an effect returns it when the other side said when to come
// back (HTTP 429 or 503 with Retry-After). It counts as an attempt like
// any failure. Build it with [RetryAfter].
type RetryAfterError struct {
	// Delay is the earliest time to try again, from now; not negative.
	Delay time.Duration
	// Err is the failure; it may be nil.
	Err error
}

// RetryAfter returns an error that makes the relay try the row again after
// at least d (the larger of d, capped at RetryAfterMax, and the row's
// exponential backoff), unless its attempts are exhausted, then the row is
// dead. A negative d counts as 0. errors.Is(err, &RetryAfterError{})
// matches it whatever it wraps; errors.Is(err, target) also matches what
// it wraps.
func RetryAfter(d time.Duration, err error) error {
	return &RetryAfterError{Delay: max(d, 0), Err: err}
}

// Error returns "retry after d: err".
func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

// Unwrap returns the wrapped error.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// Is reports whether target is a *RetryAfterError, whatever its fields.
func (e *RetryAfterError) Is(target error) bool {
	_, ok := target.(*RetryAfterError)
	return ok
}

// retryAfterOf returns the Delay of the first RetryAfterError in err's
// chain and true, or 0 and false.
func retryAfterOf(err error) (time.Duration, bool) {
	var r *RetryAfterError
	if errors.As(err, &r) {
		return r.Delay, true
	}
	return 0, false
}
