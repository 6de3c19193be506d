// Package lambdarec is a Kinesis Lambda handler with a partial batch
// response: the loop names a record as failed when HandleEvent fails, so
// HandleEvent's nil acks its record, and a write failure it drops is
// checkpointed past (field trial, wave 30: event-driven-ec-shop H1).
package lambdarec

import (
	"context"
	"database/sql"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// Projector writes each product event to the read model.
type Projector struct{ db *sql.DB }

// Handle projects every record; the failed ones are retried.
func (p *Projector) Handle(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	var fails []events.KinesisBatchItemFailure
	for _, r := range ev.Records {
		if err := p.HandleEvent(ctx, r.Kinesis.Data); err != nil {
			fails = append(fails, events.KinesisBatchItemFailure{ItemIdentifier: r.EventID})
			continue
		}
	}
	return events.KinesisEventResponse{BatchItemFailures: fails}, nil
}

// HandleEvent drops its write's failure.
func (p *Projector) HandleEvent(ctx context.Context, data []byte) error {
	_, _ = p.db.ExecContext(ctx, "UPDATE products SET doc = $1 WHERE id = 1", data)
	return nil
}

// Main starts the Lambda.
func Main(p *Projector) { lambda.Start(p.Handle) }
