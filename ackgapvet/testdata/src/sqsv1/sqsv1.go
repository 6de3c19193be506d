package sqsv1

import (
	"context"
	"database/sql"

	"github.com/aws/aws-sdk-go/service/sqs"
	"github.com/aws/aws-sdk-go/service/sqs/sqsiface"
)

// receive is a wrapper that receives once: not the loop.
func receive(ctx context.Context, svc *sqs.SQS, url string) ([]*sqs.Message, error) {
	out, err := svc.ReceiveMessageWithContext(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// run calls the wrapper in a loop: the consumer. It deletes first.
func run(ctx context.Context, svc *sqs.SQS, url string, db *sql.DB) {
	for {
		msgs, err := receive(ctx, svc, url)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			_, _ = svc.DeleteMessageWithContext(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}) // want `medium: acks with sqs.SQS.DeleteMessageWithContext before the work \(a database write \(sql.DB.ExecContext\) at line \d+\)`
			_, _ = db.ExecContext(ctx, "INSERT INTO seen VALUES ($1)", m.MessageId)
		}
	}
}

// viaInterface receives through sqsiface in its own loop and deletes after
// the work: clean.
func viaInterface(ctx context.Context, svc sqsiface.SQSAPI, url string, db *sql.DB) {
	for {
		out, err := svc.ReceiveMessageWithContext(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if _, err := db.ExecContext(ctx, "INSERT INTO seen VALUES ($1)", m.MessageId); err != nil {
				continue
			}
			_, _ = svc.DeleteMessageWithContext(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// ifaceFirst deletes through the interface before the work.
func ifaceFirst(ctx context.Context, svc sqsiface.SQSAPI, url string, db *sql.DB) {
	for {
		out, _ := svc.ReceiveMessageWithContext(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
		for _, m := range out.Messages {
			_, _ = svc.DeleteMessageWithContext(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}) // want `acks with sqsiface.SQSAPI.DeleteMessageWithContext before the work`
			_, _ = db.ExecContext(ctx, "INSERT INTO seen VALUES ($1)", m.MessageId)
		}
	}
}

// Provider is the application's own SQS type: it deletes a message given
// the SDK's message.
type Provider struct {
	svc *sqs.SQS
	url string
}

// DeleteMessage deletes m.
func (p *Provider) DeleteMessage(m *sqs.Message) error {
	_, err := p.svc.DeleteMessage(&sqs.DeleteMessageInput{QueueUrl: &p.url, ReceiptHandle: m.ReceiptHandle})
	return err
}

// runProvider deletes through the provider before the work.
func runProvider(ctx context.Context, p *Provider, db *sql.DB) {
	for {
		out, err := p.svc.ReceiveMessageWithContext(ctx, &sqs.ReceiveMessageInput{QueueUrl: &p.url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			_ = p.DeleteMessage(m) // want `medium: acks with sqsv1.Provider.DeleteMessage before the work`
			_, _ = db.ExecContext(ctx, "INSERT INTO seen VALUES ($1)", m.MessageId)
		}
	}
}
