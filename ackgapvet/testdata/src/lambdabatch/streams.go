package lambdabatch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

type change struct{ ID string }

// kinesisWhole fails the whole Kinesis batch on a record that does not
// decode (field trial wave 13, watchops H3): the shard stops behind it.
func kinesisWhole(ctx context.Context, ev events.KinesisEvent) error {
	for _, rec := range ev.Records {
		var c change
		if err := json.Unmarshal(rec.Kinesis.Data, &c); err != nil {
			return fmt.Errorf("decode %s: %w", rec.EventID, err) // want `medium: returning an error for one record fails the whole Kinesis batch: Lambda retries it in place`
		}
	}
	return nil
}

// dynamoWhole fails the whole DynamoDB Streams batch.
func dynamoWhole(ctx context.Context, ev events.DynamoDBEvent) error {
	for _, rec := range ev.Records {
		if rec.EventID == "" {
			return fmt.Errorf("no id") // want `fails the whole DynamoDB Streams batch.*events.DynamoDBEventResponse`
		}
	}
	return nil
}

// kafkaWhole fails the whole Kafka batch (a map of partitions to records).
func kafkaWhole(ctx context.Context, ev events.KafkaEvent) error {
	for _, records := range ev.Records {
		for _, rec := range records {
			var c change
			if err := json.Unmarshal([]byte(rec.Value), &c); err != nil {
				return err // want `fails the whole Kafka batch.*stops its partition`
			}
		}
	}
	return nil
}

// kinesisPartial answers with the failed record: clean.
func kinesisPartial(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	var resp events.KinesisEventResponse
	for _, rec := range ev.Records {
		var c change
		if err := json.Unmarshal(rec.Kinesis.Data, &c); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: rec.EventID})
			return resp, nil
		}
	}
	return resp, nil
}

// dynamoPartialWithError fills the response and returns an error too.
func dynamoPartialWithError(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
	for _, rec := range ev.Records {
		if rec.EventID == "" {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.EventID})
		}
	}
	if len(resp.BatchItemFailures) > 0 {
		return resp, fmt.Errorf("failed") // want `returns the batch item failures together with an error`
	}
	return resp, nil
}

// dynamoFirstOnly reads only the batch's first record (field trial, wave
// 39: Zircon): its failure with an error retries that record alone, so
// there is no other record whose work a retry repeats. Clean.
func dynamoFirstOnly(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	if len(ev.Records) == 0 {
		return resp, nil
	}
	rec := ev.Records[0]
	if rec.EventID == "" {
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.EventID}}
		return resp, fmt.Errorf("no id")
	}
	return resp, nil
}

// dynamoFirstThenAll reads the first record and then the others: the
// response with an error repeats the others' work.
func dynamoFirstThenAll(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	if ev.Records[0].EventID == "" {
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].EventID}}
		return resp, fmt.Errorf("no id") // want `returns the batch item failures together with an error`
	}
	for _, rec := range ev.Records[1:] {
		_ = rec
	}
	return resp, nil
}
