package kinesispoll

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go/service/kinesis"
)

// kinesisClient is the reader's own interface over the client, kept for
// tests (wave 15, harlow/kinesis-consumer's shard loop).
type kinesisClient interface {
	GetRecordsWithContext(ctx context.Context, in *kinesis.GetRecordsInput) (*kinesis.GetRecordsOutput, error)
}

func readShardIface(ctx context.Context, k kinesisClient, it *string) error {
	for it != nil {
		out, err := k.GetRecordsWithContext(ctx, &kinesis.GetRecordsInput{ShardIterator: it})
		if err != nil {
			return err
		}
		for _, r := range out.Records {
			_, _ = http.Post("https://sink.example.com", "text/plain", strings.NewReader(string(r.Data))) // want `an HTTP request \(http.Post\) on the consumer path of Kinesis GetRecords loop readShardIface`
		}
		it = out.NextShardIterator
	}
	return nil
}
