// Package worker has consumers no rule finds: the configuration file and
// the -entry flag declare them.
package worker

import (
	"context"
	"net/http"

	"example.com/entrymod/certcheck"
	"example.com/entrymod/ledger"
)

// Worker drains a queue of its own making.
type Worker struct {
	Client *http.Client
	Ledger *ledger.Client
	Next   func() (string, bool)
}

// Drain is declared in .ackgapvet.json.
func (w *Worker) Drain(ctx context.Context) error {
	for {
		id, ok := w.Next()
		if !ok {
			return nil
		}
		if err := certcheck.Verify(w.Client); err != nil {
			return err
		}
		if _, err := w.Ledger.GetBalance(ctx, id); err != nil {
			return err
		}
		if err := w.Ledger.Book(ctx, id); err != nil {
			return err
		}
	}
}

// Sweep is declared with -entry.
func Sweep(client *http.Client) error {
	if err := Flush(); err != nil {
		return err
	}
	_, err := client.Post("https://archive.example/sweep", "text/plain", nil)
	return err
}

// Flush is declared with -entry in one test; Sweep reaches it, and it is
// listed all the same.
func Flush() error { return nil }

// Idle is declared nowhere: clean.
func Idle(client *http.Client) error {
	_, err := client.Post("https://archive.example/idle", "text/plain", nil)
	return err
}
