package bgcontext

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/aws/aws-lambda-go/events"
)

func work(ctx context.Context, body string) error { return nil }

func handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		if err := work(context.Background(), r.Body); err != nil { // want `medium: context.Background\(\) on the consumer path of Lambda SQS handler handle drops the message's deadline and cancellation: .*; use ctx`
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

type h struct{}

func (h) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if err := work(context.TODO(), string(msg.Value)); err != nil { // want `context.TODO\(\) on the consumer path of Sarama ConsumeClaim ConsumeClaim drops .*; use sess.Context\(\)`
			return err
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}

// main is no consumer: clean.
func main() {
	_ = work(context.Background(), "")
}
