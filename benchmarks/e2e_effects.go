package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Paths of the effect server: examples/billing's payment provider and
// mailer.
const (
	chargesPath  = "/v1/charges"
	receiptsPath = "/v1/receipts"
)

// effectServer is the other side of the end-to-end workload's effects: the
// payment provider (POST /v1/charges) and the mailer (POST /v1/receipts)
// of examples/billing, on one net/http server on a loopback port. Each
// dedupes on the Idempotency-Key header, as real providers do: the first
// call of a key is carried out (201) and its time kept, a repeat is
// answered 200 and changes nothing. Waiters registered with await learn
// when both endpoints have carried out n keys. It is safe for concurrent
// use.
type effectServer struct {
	// chargesURL and receiptsURL are the endpoints; client is the HTTP
	// client the relay calls them with.
	chargesURL, receiptsURL string
	client                  *http.Client

	srv    *http.Server
	served sync.WaitGroup

	mu sync.Mutex
	// done holds, per endpoint (0 charges, 1 receipts), the time each key
	// was first called.
	done    [2]map[string]time.Time
	waiters []effectWaiter
}

// effectWaiter is woken with the time of the call that made both
// endpoints reach n keys.
type effectWaiter struct {
	n  int
	at chan time.Time
}

// startEffects starts an effect server on 127.0.0.1, on a port the system
// picks.
func startEffects() (*effectServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("effect server: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64 // the relay's concurrency; the default 2 would dial per call
	s := &effectServer{
		client: &http.Client{Transport: transport},
		done:   [2]map[string]time.Time{{}, {}},
	}
	base := "http://" + ln.Addr().String()
	s.chargesURL, s.receiptsURL = base+chargesPath, base+receiptsPath
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	s.served.Go(func() { _ = s.srv.Serve(ln) })
	return s, nil
}

// ServeHTTP handles POST chargesPath and receiptsPath.
func (s *effectServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ep int
	switch r.URL.Path {
	case chargesPath:
	case receiptsPath:
		ep = 1
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10)); err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key header required", http.StatusBadRequest)
		return
	}
	now := time.Now()
	s.mu.Lock()
	_, repeat := s.done[ep][key]
	if !repeat {
		s.done[ep][key] = now
		s.wake(now)
	}
	s.mu.Unlock()
	if repeat {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// wake sends now to the waiters whose n both endpoints reached, and drops
// them. s.mu is held.
func (s *effectServer) wake(now time.Time) {
	reached := min(len(s.done[0]), len(s.done[1]))
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if reached >= w.n {
			w.at <- now
			continue
		}
		kept = append(kept, w)
	}
	s.waiters = kept
}

// await returns a channel that receives, once, the time of the call that
// made both endpoints reach n keys (at once if they have).
func (s *effectServer) await(n int) <-chan time.Time {
	at := make(chan time.Time, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if min(len(s.done[0]), len(s.done[1])) >= n {
		at <- time.Now()
		return at
	}
	s.waiters = append(s.waiters, effectWaiter{n: n, at: at})
	return at
}

// chargedAt returns when the charge with idempotency key key was first
// called, and false if it was not.
func (s *effectServer) chargedAt(key string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.done[0][key]
	return t, ok
}

// counts returns the keys carried out per endpoint.
func (s *effectServer) counts() (charges, receipts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.done[0]), len(s.done[1])
}

// close closes the client's idle connections, then shuts the server down
// and waits for it. The client goes first: a connection it dialled but
// never used would otherwise hold Shutdown for ReadHeaderTimeout.
func (s *effectServer) close() error {
	s.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	s.served.Wait()
	return err
}
