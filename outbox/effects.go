package outbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// Effect carries out one outbox row: it publishes a message, calls an API,
// sends an e-mail. It runs outside any transaction, with ctx bounded by
// Config.EffectTimeout, and must pass row.IdempotencyKey to the other side
// so that a repeat (after a crash between the call and its recording, or
// a timeout after the other side acted) is recognised there and not
// carried out twice (docs/design.md invariant 7).
//
// Return nil when the other side confirmed; ackgap.Permanent(reason, err)
// when retrying cannot help (the row becomes dead, redrivable); a
// [RetryAfter] error when the other side said when to come back; any
// other error to retry with backoff. An effect must honour ctx: the relay
// waits for it to return before it stops. It is called from several
// goroutines at once (Config.Concurrency). A panic is recovered and
// retried like an error.
type Effect func(ctx context.Context, row stores.OutboxRow) error

// Publish returns an [Effect] that publishes the row to topic with pub, as
// one Watermill message: payload the row's payload, UUID the row's
// idempotency key, metadata the row's headers (trace context: W3C
// traceparent and tracestate travel as they were recorded) plus the event
// id ackgap.MetadataEventIDKey ("event_id") set to the idempotency
// key. A republished row carries the same event id, so a downstream
// consumer behind the inbox skips the copy as a duplicate. A Publish error
// is retried.
//
// Watermill's Publish takes no context, so the effect calls it on a
// goroutine of its own and stops waiting when ctx ends (Config.EffectTimeout,
// or the relay's hard stop): it returns an error wrapping ctx.Err(), the
// row is retried under the same event id, and the relay's stop is not held
// up. The abandoned call may still publish its copy later: that is a
// duplicate the consumer's inbox skips. Its goroutine ends when pub.Publish
// returns; a publisher that never returns keeps one goroutine per
// abandoned call, so give the publisher a timeout of its own too.
func Publish(pub message.Publisher, topic string) Effect {
	return func(ctx context.Context, row stores.OutboxRow) error {
		msg := message.NewMessage(row.IdempotencyKey, row.Payload)
		for k, v := range row.Headers {
			msg.Metadata.Set(k, v)
		}
		msg.Metadata.Set(ackgap.MetadataEventIDKey, row.IdempotencyKey)
		msg.SetContext(ctx)
		done := make(chan error, 1)
		go func() { done <- pub.Publish(topic, msg) }()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("publish to %s: %w", topic, err)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("publish to %s: no answer before the effect's deadline (the copy may still land; "+
				"the retry carries the same event id): %w", topic, ctx.Err())
		}
	}
}

// HeaderIdempotencyKey is the HTTP request header that carries the row's
// idempotency key, as in the IETF draft "The Idempotency-Key HTTP Header
// Field" and the APIs of payment providers (Stripe, Adyen).
const HeaderIdempotencyKey = "Idempotency-Key"

// httpBodySnippet is how much of an error response's body an
// HTTPStatusError keeps.
const httpBodySnippet = 512

// HTTPStatusError is a response whose status the [HTTP] effect does not
// accept. It is wrapped in ackgap.Permanent or a [RetryAfter] error, or
// returned as is (retry with backoff); errors.As finds it.
type HTTPStatusError struct {
	// StatusCode is the response's status code.
	StatusCode int
	// Body is the start of the response body (at most 512 bytes).
	Body string
}

// Error returns "HTTP 503 Service Unavailable: <body>".
func (e *HTTPStatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if body := strings.TrimSpace(e.Body); body != "" {
		s += ": " + body
	}
	return s
}

// defaultHTTPClient is the [HTTP] effect's client when none is given:
// http.DefaultTransport's settings, but keeping up to ConcurrencyDefault
// idle connections per host (http.DefaultTransport keeps 2, so a relay
// with 100 effects in flight to one provider would open and close a
// connection for nearly every call).
var defaultHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = ConcurrencyDefault
	t.MaxIdleConns = max(t.MaxIdleConns, ConcurrencyDefault)
	return &http.Client{Transport: t}
}()

// HTTP returns an [Effect] that POSTs the row's payload to url with
// client, with the row's headers as request
// headers (content-type, traceparent) and the header Idempotency-Key set
// to the row's idempotency key (a row header of that name is replaced).
// The request's context is the effect's, so Config.EffectTimeout bounds it.
// A nil client means a shared client with http.DefaultTransport's settings
// that keeps up to ConcurrencyDefault idle connections per host; a client
// of your own should keep as many as the relay's Config.Concurrency.
//
// The response decides:
//   - 2xx: done.
//   - 408, 409 (a request with this key is still in flight), 425, 429 and
//     5xx: retried; a Retry-After header (seconds or an HTTP date) is
//     honoured through [RetryAfter].
//   - any other status (400, 401, 404, 422: the key was reused with
//     another body): permanent, the row is dead with the status and the
//     start of the body as its last error; the reason is "http_<status>".
//   - no response (connection refused, reset, timeout): retried.
//
// A url that is not an absolute http or https URL with a host is a
// configuration mistake that no retry mends: every row of the effect then
// fails permanently with reason "http_url" and an error naming the url, so
// the rows are dead at once (not retried up to MaxAttempts as "no
// response") and can be redriven after the fix.
func HTTP(client *http.Client, url string) Effect {
	if client == nil {
		client = defaultHTTPClient
	}
	if err := checkEffectURL(url); err != nil {
		return func(context.Context, stores.OutboxRow) error {
			return ackgap.Permanent("http_url", err)
		}
	}
	return func(ctx context.Context, row stores.OutboxRow) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(row.Payload))
		if err != nil {
			return ackgap.Permanent("http_request", fmt.Errorf("build request: %w", err))
		}
		for k, v := range row.Headers {
			req.Header.Set(k, v)
		}
		req.Header.Set(HeaderIdempotencyKey, row.IdempotencyKey)
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("POST %s: %w", url, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			return nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, httpBodySnippet))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		statusErr := &HTTPStatusError{StatusCode: resp.StatusCode, Body: string(body)}
		switch code := resp.StatusCode; {
		case code == http.StatusRequestTimeout, code == http.StatusConflict, code == http.StatusTooEarly,
			code == http.StatusTooManyRequests, code >= 500:
			if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				return RetryAfter(d, statusErr)
			}
			return statusErr
		default:
			return ackgap.Permanent("http_"+strconv.Itoa(code), statusErr)
		}
	}
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP-date (RFC 9110, section 10.2.3).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(RetryAfterMax/time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// checkEffectURL returns an error unless raw is an absolute http or https
// URL with a host.
func checkEffectURL(raw string) error {
	u, err := neturl.Parse(raw)
	if err != nil {
		return fmt.Errorf("outbox.HTTP: effect URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("outbox.HTTP: effect URL %q is not an absolute http or https URL with a host", raw)
	}
	return nil
}
