package billingsim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/stores"
)

// serveConsole serves the web console over store (which must implement
// stores.Operator, as pgxstore and sqlitestore do) on addr, with rec's
// live measurements, and redrive enabled by a token new per run, which
// ready gets with the URL. stop shuts it down.
func serveConsole(addr string, store any, rec *console.Recorder, ready func(url, token string)) (stop func() error, err error) {
	op, ok := store.(stores.Operator)
	if !ok {
		return nil, fmt.Errorf("-console: the store %T has no operator API", store)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b)
	h, err := console.New(op, &console.Config{Token: token, Recorder: rec,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-console: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready("http://"+ln.Addr().String()+"/", token)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}, nil
}
