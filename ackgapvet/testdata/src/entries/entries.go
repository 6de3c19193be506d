package entries

import (
	"context"
	"net/http"
)

// Worker runs a loop no rule recognises; the test declares Worker.Loop and
// sweep as entry points.
type Worker struct{ Client *http.Client }

func (w *Worker) Loop(ctx context.Context) error {
	for {
		if err := w.flush(); err != nil {
			return err
		}
	}
}

func (w *Worker) flush() error {
	_, err := w.Client.Post("https://reports.example/flush", "text/plain", nil) // want `medium: an HTTP request \(http.Client.Post\) on the consumer path of declared entry point Worker.Loop repeats`
	return err
}

func sweep(client *http.Client) error {
	_, err := client.Post("https://archive.example/sweep", "text/plain", nil) // want `on the consumer path of declared entry point sweep repeats`
	return err
}

// idle is declared nowhere: clean.
func idle(client *http.Client) error {
	_, err := client.Post("https://archive.example/idle", "text/plain", nil)
	return err
}
