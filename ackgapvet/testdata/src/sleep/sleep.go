package sleep

import (
	"context"
	"database/sql"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap/batch"
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

func batched() batch.Config[*sql.Tx] {
	return batch.Config[*sql.Tx]{
		Consumer: "billing",
		Handler:  slowOne,
		BatchHandler: func(ctx context.Context, tx *sql.Tx, msgs []*message.Message) error {
			time.Sleep(time.Second) // want `time.Sleep on the consumer path of ackgap handler \(func literal\)`
			return nil
		},
	}
}

func slowOne(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
	time.Sleep(time.Second) // want `time.Sleep on the consumer path of ackgap handler slowOne`
	return nil
}

// converted is a Watermill handler made by a conversion.
var converted = message.NoPublishHandlerFunc(func(msg *message.Message) error {
	time.Sleep(time.Second) // want `time.Sleep on the consumer path of watermill handler \(func literal\)`
	return nil
})
