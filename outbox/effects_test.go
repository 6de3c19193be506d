package outbox_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// TestHTTPEffectBadURL: an effect URL that is not an absolute http(s) URL
// fails every row permanently (dead at once, redriven after the fix) with
// an error that names the URL, instead of "no response" retried to
// MaxAttempts (a new user's walk).
func TestHTTPEffectBadURL(t *testing.T) {
	t.Parallel()
	row := stores.OutboxRow{OutboxEntry: ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{}`)}}
	for _, u := range []string{"::not a url", "/charges", "ftp://pay.example/charges", "http://"} {
		err := outbox.HTTP(nil, u)(context.Background(), row)
		require.Error(t, err, u)
		require.True(t, ackgap.IsPermanent(err), "%s: %v", u, err)
		require.Equal(t, "http_url", ackgap.ReasonOf(err), u)
		require.Contains(t, err.Error(), u)
	}
}

// TestHTTPEffect: what each response means to the HTTP effect, and what
// the request carries.
func TestHTTPEffect(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var status int
	var header http.Header
	stop := make(chan struct{}) // closed before srv.Close, which waits for handlers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		if status == -1 { // too slow: answers only after the client gave up
			_, _ = io.Copy(io.Discard, r.Body) // then the server notices the closed connection
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":"why"}`))
	}))
	defer srv.Close()
	defer close(stop)
	effect := outbox.HTTP(srv.Client(), srv.URL+"/charges")
	row := stores.OutboxRow{OutboxEntry: ackgap.OutboxEntry{
		Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount_cents":100}`),
		Headers: map[string]string{"Content-Type": "application/json", "traceparent": "00-abc-def-01", "Idempotency-Key": "forged"},
	}}
	do := func(code int, h http.Header) error {
		status, header = code, h
		// Long enough for a loopback round trip on a busy machine; the
		// too-slow case (-1) waits for this deadline to pass.
		timeout := 10 * time.Second
		if code == -1 {
			timeout = 100 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return effect(ctx, row)
	}

	require.NoError(t, do(http.StatusCreated, nil))
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/charges", got.URL.Path)
	require.Equal(t, "charge:o1", got.Header.Get("Idempotency-Key"), "the row's key, whatever its headers say")
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.Equal(t, "00-abc-def-01", got.Header.Get("Traceparent"), "trace context travels as headers")
	require.NoError(t, do(http.StatusOK, nil))

	for _, code := range []int{http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		err := do(code, nil)
		require.Error(t, err, "%d", code)
		require.False(t, ackgap.IsPermanent(err), "%d is retried", code)
		var se *outbox.HTTPStatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, code, se.StatusCode)
		require.Equal(t, `{"error":"why"}`, se.Body)
		require.NotErrorIs(t, err, &outbox.RetryAfterError{}, "no Retry-After header")
	}

	err := do(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}})
	var ra *outbox.RetryAfterError
	require.ErrorAs(t, err, &ra)
	require.Equal(t, 3*time.Second, ra.Delay)
	err = do(http.StatusServiceUnavailable, http.Header{"Retry-After": {time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)}})
	require.ErrorAs(t, err, &ra)
	require.InDelta(t, 10, ra.Delay.Seconds(), 1.5, "an HTTP date")
	err = do(http.StatusServiceUnavailable, http.Header{"Retry-After": {"soon"}})
	require.NotErrorIs(t, err, &outbox.RetryAfterError{}, "an unreadable Retry-After is ignored")
	require.False(t, ackgap.IsPermanent(err))

	for _, code := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity} {
		err := do(code, nil)
		require.True(t, ackgap.IsPermanent(err), "%d is permanent", code)
		require.Equal(t, "http_"+strconv.Itoa(code), ackgap.ReasonOf(err))
	}

	err = do(-1, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a timeout")
	require.False(t, ackgap.IsPermanent(err), "is retried")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	err = outbox.HTTP(nil, "http://"+addr+"/charges")(context.Background(), row)
	require.Error(t, err, "connection refused")
	require.False(t, ackgap.IsPermanent(err), "is retried")
}

// TestPublishEffect: the message carries the idempotency key as its event
// id and UUID, and the row's headers as metadata; a republish is the same
// event.
func TestPublishEffect(t *testing.T) {
	t.Parallel()
	pubsub := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 2}, nil)
	defer pubsub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs, err := pubsub.Subscribe(ctx, "orders.charged")
	require.NoError(t, err)
	effect := outbox.Publish(pubsub, "orders.charged")
	row := stores.OutboxRow{OutboxEntry: ackgap.OutboxEntry{
		Kind: "order.charged", IdempotencyKey: "order.charged:o1", Payload: []byte(`{"order":"o1"}`),
		Headers: map[string]string{"traceparent": "00-abc-def-01", ackgap.MetadataEventIDKey: "not this"},
	}}
	require.NoError(t, effect(ctx, row))
	require.NoError(t, effect(ctx, row))
	for range 2 {
		msg := <-msgs
		require.Equal(t, "order.charged:o1", msg.UUID)
		require.Equal(t, "order.charged:o1", msg.Metadata.Get(ackgap.MetadataEventIDKey), "the key is the event id")
		require.Equal(t, "00-abc-def-01", msg.Metadata.Get("traceparent"))
		require.Equal(t, `{"order":"o1"}`, string(msg.Payload))
		msg.Ack()
	}

	require.NoError(t, pubsub.Close())
	err = effect(ctx, row)
	require.Error(t, err, "a closed publisher")
	require.False(t, ackgap.IsPermanent(err))
}

func TestRetryAfterError(t *testing.T) {
	t.Parallel()
	cause := errors.New("rate limited")
	err := outbox.RetryAfter(2*time.Second, cause)
	require.ErrorIs(t, err, &outbox.RetryAfterError{})
	require.ErrorIs(t, err, cause)
	require.Equal(t, "retry after 2s: rate limited", err.Error())
	require.Equal(t, "retry after 0s", outbox.RetryAfter(-time.Second, nil).Error())
}

// blockingPublisher blocks its first Publish until release is closed;
// later calls return at once. It keeps every message it was given.
type blockingPublisher struct {
	release chan struct{}
	mu      sync.Mutex
	calls   int
	got     []*message.Message
}

func (p *blockingPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	p.calls++
	first := p.calls == 1
	p.mu.Unlock()
	if first {
		<-p.release
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, msgs...)
	return nil
}

func (p *blockingPublisher) Close() error { return nil }

// TestPublishHonoursEffectTimeout: a publisher that blocks does not hold
// the relay: the effect gives up at Config.EffectTimeout, the row is
// retried under the same event id and done; the blocked call, released
// later, lands a copy with that event id too (the duplicate a consumer's
// inbox skips).
func TestPublishHonoursEffectTimeout(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	pub := &blockingPublisher{release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(pub.release)
		}
	}()
	ids := insert(t, b.store, ackgap.OutboxEntry{Kind: "order.charged", IdempotencyKey: "order.charged:o1", Payload: []byte(`{}`)})
	reps := newReports()
	cfg := fast(map[string]outbox.Effect{"order.charged": outbox.Publish(pub, "orders.charged")}, reps)
	cfg.EffectTimeout = 200 * time.Millisecond
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	stop := running(t, relay)

	first := reps.next(t)
	require.Equal(t, outbox.OutcomeRetry, first.Outcome)
	require.ErrorIs(t, first.Err, context.DeadlineExceeded)
	require.Equal(t, outbox.OutcomeDone, reps.next(t).Outcome, "the retry publishes")
	stop()
	require.Equal(t, stores.OutboxDone, rowOf(t, b.store, ids[0]).State)

	close(pub.release)
	released = true
	require.Eventually(t, func() bool {
		pub.mu.Lock()
		defer pub.mu.Unlock()
		return len(pub.got) == 2
	}, 10*time.Second, 5*time.Millisecond, "the abandoned call lands its copy late")
	pub.mu.Lock()
	defer pub.mu.Unlock()
	for _, msg := range pub.got {
		require.Equal(t, "order.charged:o1", msg.Metadata.Get(ackgap.MetadataEventIDKey), "one event id on both copies")
	}
}
