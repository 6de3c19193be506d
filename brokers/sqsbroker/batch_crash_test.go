package sqsbroker_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/internal/childproc"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// roleBatchChild is the child process of TestBatchConsumerKilledInAckGap.
const roleBatchChild = "sqs-batch-consumer"

// runBatchChild runs a BatchConsumer on the queue SQSB_QUEUE with the
// PostgreSQL schema SQSB_SCHEMA; after the first batch that committed an
// event it says "COMMITTED <n>" and blocks before the delete, in the ack
// gap, for its parent to kill it.
func runBatchChild() error {
	ctx := context.Background()
	pool, err := testdb.Open(ctx, os.Getenv("SQSB_SCHEMA"), 4)
	if err != nil {
		return err
	}
	store, err := pgxstore.New(pool, nil)
	if err != nil {
		return err
	}
	p, err := batch.New(store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: applyPG})
	if err != nil {
		return err
	}
	ep := os.Getenv("SQS_ENDPOINT")
	if ep == "" {
		ep = "http://127.0.0.1:4566"
	}
	fns := []func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint, o.Region = aws.String(ep), "us-east-1"
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})
	}}
	inGap := func(ctx context.Context, msgs []*message.Message) []error {
		errs := p.ProcessErrors(ctx, msgs)
		n := 0
		for _, err := range errs {
			if err == nil {
				n++
			}
		}
		if n > 0 {
			childproc.Say("COMMITTED %d", n)
			select {} // committed, not deleted: the ack gap
		}
		return errs
	}
	bc, err := sqsbroker.NewBatchConsumer(ctx, inGap, &sqsbroker.SubscriberConfig{
		OptFns: fns, Queue: os.Getenv("SQSB_QUEUE"), AttemptTimeout: time.Second, WaitTimeSeconds: 1, Workers: 1,
	}, nil)
	if err != nil {
		return err
	}
	childproc.Say("READY")
	return bc.Run(ctx)
}

// TestBatchConsumerKilledInAckGap: a BatchConsumer process is killed with
// SIGKILL after its batch transaction committed and before
// DeleteMessageBatch, on a standard and on a FIFO queue. The committed
// messages return when their leases lapse (visibility timeout 6 s) and a
// new BatchConsumer skips them through the inbox: every event applied
// exactly once (a second application would raise its count to 2), nothing
// lost, and on the FIFO queue each group still in send order.
func TestBatchConsumerKilledInAckGap(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "standard", true: "fifo"}[fifo], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := client(t)
			attrs := map[string]string{}
			if fifo {
				attrs["FifoQueue"] = "true"
			}
			name, url := createQueue(t, c, "batch-kill", 6*time.Second, attrs)
			pub := newPublisher(t)
			const n = 10
			for i := 1; i <= n; i++ {
				grp := "g" + strconv.Itoa(i%5)
				require.NoError(t, pub.Publish(name, fifoEvent("E"+strconv.Itoa(i), grp, i)))
			}
			b := newPGBackend(t)
			var schema string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema))

			child := childproc.Start(t, roleBatchChild, "SQSB_QUEUE="+name, "SQSB_SCHEMA="+schema)
			child.WaitFor(t, time.Minute, func(line string) bool { return strings.HasPrefix(line, "COMMITTED ") })
			child.Kill(t)
			committed := b.applied(t)
			require.NotEmpty(t, committed, "the child committed a batch before it was killed")

			var mu sync.Mutex
			var ran []string
			p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
				id, _ := ackgap.EventIDFromContext(ctx)
				mu.Lock()
				ran = append(ran, id)
				mu.Unlock()
				return applyPG(ctx, tx, msg)
			}})
			require.NoError(t, err)
			bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{
				OptFns: optFns(t), Queue: name, AttemptTimeout: time.Second, WaitTimeSeconds: 1,
			}, testLogger())
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- bc.Run(ctx) }()
			t.Cleanup(func() { _ = bc.Close() })
			eventually(t, time.Minute, "every event applied and the queue empty", func() bool {
				visible, inFlight := queueCounts(t, c, url)
				return len(b.applied(t)) == n && visible == 0 && inFlight == 0
			})
			require.NoError(t, bc.Close())
			require.NoError(t, <-done)

			want := map[string]int{}
			for i := 1; i <= n; i++ {
				want["E"+strconv.Itoa(i)] = 1
			}
			require.Equal(t, want, b.applied(t), "each event once: the committed ones were skipped when they returned")
			mu.Lock()
			defer mu.Unlock()
			for id := range committed {
				require.NotContains(t, ran, id, "committed before the kill, so the inbox skipped it before the handler")
			}
			require.Len(t, ran, n-len(committed))
			if fifo {
				// E<i> is in group g<i%5>: within a group the ids rise.
				last := map[int]int{}
				for _, id := range ran {
					i, _ := strconv.Atoi(id[1:])
					require.Greater(t, i, last[i%5], fmt.Sprintf("group g%d out of order: %v", i%5, ran))
					last[i%5] = i
				}
			}
		})
	}
}
