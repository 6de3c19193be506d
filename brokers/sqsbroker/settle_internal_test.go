package sqsbroker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// fakeDeletes is an SQS endpoint that answers DeleteMessageBatch only:
// it records each request's receipt handles, holds the first request until
// release is closed (when hold is set), and fails the entries whose
// receipt handle is in fail with that code, every time.
type fakeDeletes struct {
	srv     *httptest.Server
	hold    bool
	release chan struct{}
	fail    map[string]string

	mu       sync.Mutex
	requests [][]string
}

func newFakeDeletes(t *testing.T, hold bool, fail map[string]string) *fakeDeletes {
	f := &fakeDeletes{hold: hold, release: make(chan struct{}), fail: fail}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AmazonSQS.DeleteMessageBatch" {
			http.Error(w, "only DeleteMessageBatch", http.StatusBadRequest)
			return
		}
		var in struct {
			Entries []struct{ Id, ReceiptHandle string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		handles := make([]string, len(in.Entries))
		for i, e := range in.Entries {
			handles[i] = e.ReceiptHandle
		}
		f.mu.Lock()
		f.requests = append(f.requests, handles)
		first := len(f.requests) == 1
		f.mu.Unlock()
		if first && f.hold {
			<-f.release
		}
		type entry struct{ Id, Code, Message string }
		out := struct {
			Successful []entry
			Failed     []entry
		}{Successful: []entry{}, Failed: []entry{}}
		for _, e := range in.Entries {
			if code, ok := f.fail[e.ReceiptHandle]; ok {
				out.Failed = append(out.Failed, entry{Id: e.Id, Code: code, Message: "injected"})
				continue
			}
			out.Successful = append(out.Successful, entry{Id: e.Id})
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDeletes) sent() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// settlerOn starts a settler on f with the given linger, closed when t
// ends (if the test did not close it).
func settlerOn(t *testing.T, f *fakeDeletes, linger time.Duration) (*settler, *counters) {
	return settlerTimeout(t, f, linger, 5*time.Second)
}

// settlerTimeout is settlerOn with a request timeout.
func settlerTimeout(t *testing.T, f *fakeDeletes, linger, timeout time.Duration) (*settler, *counters) {
	client := sqs.New(sqs.Options{
		BaseEndpoint: aws.String(f.srv.URL), Region: "us-east-1", RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
	})
	url := f.srv.URL + "/000000000000/q"
	ls := newLeases(client, url, 30*time.Second, 10*time.Second, timeout, watermill.NopLogger{})
	stats := &counters{}
	return newSettler(client, url, ls, timeout, linger, 1, watermill.NopLogger{}, stats), stats
}

// results collects the settle outcome of each receipt handle.
type results struct {
	mu  sync.Mutex
	got map[string]ackgap.SettleOutcome
}

// deletes returns one delete item per receipt handle prefix-1..prefix-n.
func (r *results) deletes(prefix string, n int) []settleItem {
	items := make([]settleItem, n)
	for i := range items {
		h := fmt.Sprintf("%s-%d", prefix, i+1)
		items[i] = settleItem{l: &lease{receipt: h, messageID: h}, delete: true, done: func(res settleResult) {
			r.mu.Lock()
			r.got[h] = res.outcome
			r.mu.Unlock()
		}}
	}
	return items
}

func (r *results) outcomes() map[string]ackgap.SettleOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.got)
}

// TestSettlerCoalescesAcrossBatches: deletes of several batches share
// DeleteMessageBatch requests. With nothing in flight a batch's deletes
// leave at once; the deletes of two batches handed over while that
// request is unanswered leave together in the next one. With a long
// linger, three batches of 3, 4 and 5 make one full request of ten at
// once, and Close sends the last two.
func TestSettlerCoalescesAcrossBatches(t *testing.T) {
	t.Parallel()
	t.Run("while a request is in flight", func(t *testing.T) {
		t.Parallel()
		f := newFakeDeletes(t, true, nil)
		st, stats := settlerOn(t, f, 0)
		r := &results{got: map[string]ackgap.SettleOutcome{}}
		st.submit(r.deletes("a", 3))
		require.Eventually(t, func() bool { return len(f.sent()) == 1 }, 10*time.Second, time.Millisecond, "a's deletes leave at once")
		st.submit(r.deletes("b", 4))
		st.submit(r.deletes("c", 5))
		close(f.release)
		st.close()
		require.Equal(t, [][]string{
			{"a-1", "a-2", "a-3"},
			{"b-1", "b-2", "b-3", "b-4", "c-1", "c-2", "c-3", "c-4", "c-5"},
		}, f.sent(), "b's and c's deletes waited for a's answer and share one request")
		require.Len(t, r.outcomes(), 12)
		for h, o := range r.outcomes() {
			require.Equal(t, AckDeleted, o, h)
		}
		require.Equal(t, int64(12), stats.deleted.Load())
	})
	t.Run("full requests at once, the rest on close", func(t *testing.T) {
		t.Parallel()
		f := newFakeDeletes(t, false, nil)
		st, _ := settlerOn(t, f, time.Hour)
		r := &results{got: map[string]ackgap.SettleOutcome{}}
		st.submit(r.deletes("a", 3))
		st.submit(r.deletes("b", 4))
		st.submit(r.deletes("c", 5))
		require.Eventually(t, func() bool { return len(f.sent()) == 1 }, 10*time.Second, time.Millisecond, "a full request leaves without waiting for the linger")
		st.close()
		require.Equal(t, [][]string{
			{"a-1", "a-2", "a-3", "b-1", "b-2", "b-3", "b-4", "c-1", "c-2", "c-3"},
			{"c-4", "c-5"},
		}, f.sent())
		require.Len(t, r.outcomes(), 12, "close sent and answered every pending delete")
	})
}

// TestSettlerDeleteFailures: an entry SQS refuses as a lost lease is
// stale at once, not tried again; an entry that fails otherwise is tried
// deleteAttempts times, then reported failed and counted.
func TestSettlerDeleteFailures(t *testing.T) {
	t.Parallel()
	f := newFakeDeletes(t, false, map[string]string{"x-2": "ReceiptHandleIsInvalid", "x-3": "InternalError"})
	st, stats := settlerOn(t, f, 0)
	r := &results{got: map[string]ackgap.SettleOutcome{}}
	st.submit(r.deletes("x", 3))
	st.close()
	require.Equal(t, map[string]ackgap.SettleOutcome{"x-1": AckDeleted, "x-2": AckStale, "x-3": AckFailed}, r.outcomes())
	var tries int
	for _, req := range f.sent() {
		if slices.Contains(req, "x-3") {
			tries++
		}
		require.LessOrEqual(t, len(req), maxBatchEntries)
	}
	require.Equal(t, deleteAttempts, tries, "the failing entry is tried again, and only it")
	require.Equal(t, [3]int64{1, 1, 1}, [3]int64{stats.deleted.Load(), stats.stale.Load(), stats.deleteFailed.Load()})
}

// TestSettlerCloseBounded: when SQS does not answer, close still returns
// (its requests end at the request timeout counted from close, and no
// retry starts after it); the unanswered deletes are reported failed and
// counted, so their messages return when their leases lapse.
func TestSettlerCloseBounded(t *testing.T) {
	t.Parallel()
	f := newFakeDeletes(t, true, nil)
	t.Cleanup(func() { close(f.release) }) // before the server closes (cleanups run last first)
	st, stats := settlerTimeout(t, f, time.Hour, 300*time.Millisecond)
	r := &results{got: map[string]ackgap.SettleOutcome{}}
	st.submit(r.deletes("x", 3))
	closed := make(chan struct{})
	go func() { st.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("close did not return while SQS did not answer")
	}
	require.Equal(t, map[string]ackgap.SettleOutcome{"x-1": AckFailed, "x-2": AckFailed, "x-3": AckFailed}, r.outcomes())
	require.Len(t, f.sent(), 1, "no retry after close's deadline")
	require.Equal(t, int64(3), stats.deleteFailed.Load())
}
