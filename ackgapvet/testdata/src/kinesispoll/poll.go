// Package kinesispoll reads a shard with GetRecords in a loop of its own
// (field trial wave 14, baker): a consumer like any receive loop.
package kinesispoll

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go/service/kinesis"
)

func readShard(ctx context.Context, k *kinesis.Kinesis, it *string) error {
	for it != nil {
		out, err := k.GetRecordsWithContext(ctx, &kinesis.GetRecordsInput{ShardIterator: it})
		if err != nil {
			return err
		}
		for _, r := range out.Records {
			_, _ = http.Post("https://sink.example.com", "text/plain", strings.NewReader(string(r.Data))) // want `an HTTP request \(http.Post\) on the consumer path of Kinesis GetRecords loop readShard`
		}
		it = out.NextShardIterator
	}
	return nil
}
