// Package dynamostreams reads a DynamoDB stream's shard with GetRecords in
// a loop of its own (field trial, wave 35: pismo-eval C2): a consumer like
// any receive loop, found without the Lambda trigger.
package dynamostreams

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

func ReadShard(ctx context.Context, c *dynamodbstreams.Client, it *string) error {
	for it != nil {
		out, err := c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})
		if err != nil {
			return err
		}
		for _, r := range out.Records {
			_, _ = http.Post("https://hooks.example.com/"+r.EventName, "text/plain", strings.NewReader(*r.EventID)) // want `an HTTP request \(http.Post\) on the consumer path of DynamoDB Streams GetRecords loop ReadShard`
		}
		it = out.NextShardIterator
	}
	return nil
}
