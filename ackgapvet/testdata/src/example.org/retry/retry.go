// Package retry is a library that calls a function until it succeeds,
// before it returns.
package retry

import "context"

// Do calls f up to three times and returns its last error.
func Do(ctx context.Context, f func() error) error {
	var err error
	for range 3 {
		if err = f(); err == nil {
			return nil
		}
	}
	return err
}
