package bgcontext

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
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
		if err := work(context.TODO(), string(msg.Value)); err != nil { // want `context.TODO\(\) on the consumer path of Sarama ConsumeClaim drops .*; use sess.Context\(\)`
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

// A Watermill handler that drops msg.Context() for a fresh context.
func register(r *message.Router) {
	r.AddNoPublisherHandler("work", "orders", nil, func(msg *message.Message) error {
		return work(context.Background(), string(msg.Payload)) // want `context.Background\(\) on the consumer path of watermill handler .* drops .*; use msg.Context\(\)`
	})
	r.AddNoPublisherHandler("ok", "orders", nil, func(msg *message.Message) error {
		return work(msg.Context(), string(msg.Payload)) // the message's context: clean
	})
}

// A Watermill handler declared as a function, its parameter named m.
func onOrder(m *message.Message) error {
	return work(context.TODO(), string(m.Payload)) // want `context.TODO\(\) on the consumer path of watermill handler onOrder drops .*; use m.Context\(\)`
}

func registerNamed(r *message.Router) {
	r.AddNoPublisherHandler("named", "orders", nil, onOrder)
}

// notHandler takes a message but is registered nowhere: clean.
func notHandler(m *message.Message) error {
	return work(context.Background(), string(m.Payload))
}
