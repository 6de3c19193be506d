package sqsbroker_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/sqsbroker"
)

// bodyRecorder is an HTTP client that keeps what it was handed.
type bodyRecorder struct {
	req *http.Request
}

func (r *bodyRecorder) Do(req *http.Request) (*http.Response, error) {
	r.req = req
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// closedAfterRead is a request body like smithy-go's: once closed, it
// reads io.EOF as an error (what net/http's probe then fails on).
type closedAfterRead struct {
	io.Reader
	closed bool
}

func (b *closedAfterRead) Read(p []byte) (int, error) {
	if b.closed {
		return 0, io.ErrClosedPipe
	}
	return b.Reader.Read(p)
}

func (b *closedAfterRead) Close() error { b.closed = true; return nil }

// TestBufferRequestBodies: the option wraps the HTTP client set before it
// (once, however often it is applied), and what reaches that client is an
// in-memory copy of the body with its length and GetBody, still readable
// after the SDK closes the body it built.
func TestBufferRequestBodies(t *testing.T) {
	t.Parallel()
	rec := &bodyRecorder{}
	o := sqs.Options{HTTPClient: rec}
	sqsbroker.BufferRequestBodies(&o)
	wrapped := o.HTTPClient
	require.NotEqual(t, sqs.HTTPClient(rec), wrapped, "wrapped")
	sqsbroker.BufferRequestBodies(&o)
	require.Equal(t, wrapped, o.HTTPClient, "applied twice, wrapped once")

	const payload = `{"QueueUrl":"q","MaxNumberOfMessages":10}`
	orig := &closedAfterRead{Reader: strings.NewReader(payload)}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", orig)
	require.NoError(t, err)
	req.ContentLength = -1
	resp, err := o.HTTPClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.True(t, orig.closed, "the SDK's body is read and closed up front")
	require.Equal(t, int64(len(payload)), rec.req.ContentLength)
	got, err := io.ReadAll(rec.req.Body)
	require.NoError(t, err)
	require.Equal(t, payload, string(got), "the copy reads after the original was closed")
	again, err := rec.req.GetBody()
	require.NoError(t, err)
	got, err = io.ReadAll(again)
	require.NoError(t, err)
	require.Equal(t, payload, string(got))

	def := sqs.Options{}
	sqsbroker.BufferRequestBodies(&def)
	require.NotNil(t, def.HTTPClient, "no client set: the SDK's default, wrapped")
}

// lateConn widens the window in which the SDK loses a ReceiveMessage
// response: its Write returns a little after the bytes left (so net/http's
// write loop reads the request body again only once the response has
// arrived and the SDK has closed that body), and every Read but the first
// waits a little longer (so the rest of a response larger than net/http's
// read buffer is read after that).
type lateConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *lateConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	time.Sleep(5 * time.Millisecond)
	return n, err
}

func (c *lateConn) Read(p []byte) (int, error) {
	if c.reads.Add(1) > 1 {
		time.Sleep(25 * time.Millisecond)
	}
	return c.Conn.Read(p)
}

// TestBufferRequestBodiesKeepsReceives, on fauxqs: a ReceiveMessage of 10
// messages whose response outruns net/http's write loop hands over all 10,
// and none is left in flight. Without the option the SDK cannot read that
// response ("use of closed network connection"), retries, gets nothing,
// and the 10 stay invisible for the whole visibility timeout: a harness
// loop on a client without it stalled whole runs of the SQS modes
// comparison for 30 s.
func TestBufferRequestBodiesKeepsReceives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := createQueue(t, client(t), "buffered-bodies", 30*time.Second, nil)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &lateConn{Conn: c}, nil
	}
	ep := endpoint(t)
	c := sqs.New(sqs.Options{}, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(ep)
		o.Region = "us-east-1"
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})
		o.HTTPClient = &http.Client{Transport: tr}
	}, sqsbroker.BufferRequestBodies)
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		// 10 × 1 KB: the response is larger than net/http's 4 KB read buffer.
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(strings.Repeat("m", 1000))})
	}
	sent, err := client(t).SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	require.NoError(t, err)
	require.Empty(t, sent.Failed)

	got := 0
	for got < 10 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			break
		}
		got += len(out.Messages)
	}
	attrs, err := client(t).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(t, err)
	require.Equal(t, 10, got, "every message handed over; in flight: %s", attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])
}
