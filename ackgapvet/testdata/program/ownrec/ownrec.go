// Package ownrec is a Lambda SQS handler on the code's own record types,
// decoded from the same JSON as aws-lambda-go's events (field trial,
// wave 37: deplio's q_receiver).
package ownrec

import (
	"context"
	"log"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
)

// SQSMessage is one record of the batch.
type SQSMessage struct {
	MessageID     string `json:"messageId"`
	ReceiptHandle string `json:"receiptHandle"`
	Body          string `json:"body"`
}

// SQSEvent is the batch.
type SQSEvent struct {
	Records []SQSMessage `json:"Records"`
}

// Deliver forwards every record's body; a failed request is only logged.
func Deliver(ctx context.Context, event *SQSEvent) (string, error) {
	for _, m := range event.Records {
		resp, err := http.Post("https://hooks.example/deliver", "text/plain", strings.NewReader(m.Body))
		if err != nil {
			log.Printf("deliver %s: %v", m.MessageID, err)
			continue
		}
		resp.Body.Close()
	}
	return "ok", nil
}

// Main starts the handler.
func Main() { lambda.Start(Deliver) }

// Row is a report row: not a queue's record.
type Row struct {
	ID   string `json:"id"`
	Body string `json:"body"`
}

// Report is a direct invocation's payload.
type Report struct {
	Records []Row `json:"records"`
}

// Summarize posts a report; it is invoked directly, not by a queue.
func Summarize(ctx context.Context, r Report) error {
	for _, row := range r.Records {
		resp, err := http.Post("https://reports.example/rows", "text/plain", strings.NewReader(row.Body))
		if err != nil {
			return err
		}
		resp.Body.Close()
	}
	return nil
}

// MainReport starts the report function.
func MainReport() { lambda.Start(Summarize) }
