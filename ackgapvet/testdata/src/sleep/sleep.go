package sleep

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func register(r *message.Router) {
	r.AddNoPublisherHandler("h", "t", nil, func(msg *message.Message) error {
		time.Sleep(time.Second) // want `medium: time.Sleep on the consumer path of watermill handler \(func literal\) holds the message's lease`
		return nil
	})
}

func poll(ctx context.Context, c *sqs.Client) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil || len(out.Messages) == 0 {
			time.Sleep(time.Second) // clean: backoff between polls
			continue
		}
		for _, m := range out.Messages {
			process(m)
		}
	}
}

func process(m sqs.Message) {
	time.Sleep(time.Second) // want `time.Sleep on the consumer path of SQS receive loop poll`
}
