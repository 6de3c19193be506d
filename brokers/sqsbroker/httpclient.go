package sqsbroker

import (
	"bytes"
	"io"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// withBufferedBodies returns optFns followed by [BufferRequestBodies].
func withBufferedBodies(optFns []func(*sqs.Options)) []func(*sqs.Options) {
	out := append([]func(*sqs.Options){}, optFns...)
	return append(out, BufferRequestBodies)
}

// BufferRequestBodies is an SQS client option that wraps the client's
// HTTP client (the one set by the options before it, or the SDK's
// default) so that net/http gets an in-memory copy of every request body.
// Every client this package builds has it; add it, last, to the options
// of an SQS client of your own that receives messages:
//
//	client := sqs.NewFromConfig(cfg, sqsbroker.BufferRequestBodies)
//
// Without it, the response to a ReceiveMessage that comes back fast
// sometimes cannot be read: smithy-go closes the request body while
// net/http still probes it, net/http closes the connection, and the SDK
// retries the call; but the first response already took its messages in
// flight, nobody holds them, and SQS hides them for the whole visibility
// timeout (aws/aws-sdk-go-v2#1825, #2737). Applying it twice wraps once.
// The wrapped client is safe for concurrent use if the one it wraps is.
func BufferRequestBodies(o *sqs.Options) {
	next := o.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	if _, ok := next.(bufferedBodyClient); !ok {
		o.HTTPClient = bufferedBodyClient{next: next}
	}
}

// bufferedBodyClient hands net/http a request body of its own, read into
// memory (SQS request bodies are small JSON documents).
//
// Without it a fast response loses messages for a whole visibility
// timeout. smithy-go closes the request body it built as soon as Do
// returns (transport/http/client.go), and a closed body's WriteTo returns
// io.EOF as an error. When the response arrives before net/http's write
// loop has finished with the body (it probes for bytes beyond
// ContentLength after sending it), the probe fails, the write loop closes
// the connection, and the response body cannot be read: "deserialization
// failed, failed to decode response body, ...: use of closed network
// connection" (aws/aws-sdk-go-v2#1825, #2737). The SDK retries the call
// (net.ErrClosed is retryable since aws-sdk-go-v2#2949), but for
// ReceiveMessage the first response already took its messages in flight:
// nobody holds them, and SQS hides them for the whole visibility timeout.
// Against fauxqs on loopback this happened in one full test run in four to
// eight (TestRoundTrip took 30 s instead of 0.5 s). With a body net/http
// knows to be in memory (an io.NopCloser around a *bytes.Reader) the
// headers and body go out together and the probe reads the client's own
// copy, which nobody closes early.
type bufferedBodyClient struct {
	next sqs.HTTPClient
}

// Do implements sqs.HTTPClient.
func (c bufferedBodyClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.ContentLength = int64(len(body))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c.next.Do(r)
}

var _ sqs.HTTPClient = bufferedBodyClient{}
