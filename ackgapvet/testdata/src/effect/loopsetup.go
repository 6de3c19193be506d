package effect

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// topicNotifier's receive loop sends a message to a topic queue once before
// it starts receiving and once after it stops: set-up and clean-up, made
// once per start, not per message. The send inside the loop is per
// message and repeats on a redelivery.
func topicNotifier(ctx context.Context, c *sqs.Client, url *string) {
	c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url}) // before the loop: once per start
	defer c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url})
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: m.Body}) // want `repeats on every redelivery`
			c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
		}
	}
	c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url}) // after the loop: once per stop
}
