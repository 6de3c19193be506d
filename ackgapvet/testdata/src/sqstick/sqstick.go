// Package sqstick receives once per tick: the loop is a ticker in another
// package calling Monitor through an interface, so the function that takes
// the wrapper's messages is the consumer.
package sqstick

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go/service/sqs"
	"github.com/aws/aws-sdk-go/service/sqs/sqsiface"
)

type Monitor struct {
	SQS sqsiface.SQSAPI
	URL string
}

func (m Monitor) receive() ([]*sqs.Message, error) {
	out, err := m.SQS.ReceiveMessage(&sqs.ReceiveMessageInput{QueueUrl: &m.URL})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// Monitor is called every few seconds by the caller's ticker.
func (m Monitor) Monitor(ctx context.Context) error {
	msgs, err := m.receive()
	if err != nil {
		return err
	}
	for _, msg := range msgs {
		_, _ = m.SQS.DeleteMessage(&sqs.DeleteMessageInput{QueueUrl: &m.URL, ReceiptHandle: msg.ReceiptHandle}) // want `acks with sqsiface.SQSAPI.DeleteMessage before the work \(an HTTP request \(http.Post\)`
		_, _ = http.Post("http://drain.local/", "text/plain", nil)
	}
	return nil
}
