package sqsbroker_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/router"
)

// BenchmarkConsume200 measures the end-to-end consume rate against the
// local SQS server: 200 events already in the queue go through the router
// and a SQLite inbox (receive, inbox transaction, commit, delete), for
// the settings that decide it. Publishing is not timed. Run:
//
//	go test -run '^$' -bench Consume200 -benchtime 3x ./brokers/sqsbroker/
func BenchmarkConsume200(b *testing.B) {
	const n = 200
	for _, workers := range []int{1, 4, 8} {
		for _, batch := range []int{1, 10} {
			b.Run(fmt.Sprintf("workers=%d/batch=%d", workers, batch), func(b *testing.B) {
				c := client(b)
				var total time.Duration
				for range b.N {
					b.StopTimer()
					name, _ := createQueue(b, c, "bench", 30*time.Second, nil)
					publishParallel(b, name, n)
					bk := newBackend(b)
					o := &observed{}
					sub := newSubscriber(b, name, func(c *sqsbroker.SubscriberConfig) {
						c.AckObserver = o.observeAck
						c.Workers = workers
						c.MaxNumberOfMessages = batch
					})
					b.StartTimer()
					start := time.Now()
					rn := runRouter(b, bk, sub, router.Config{}, o, apply)
					o.waitAcks(b, n, 60*time.Second)
					total += time.Since(start)
					b.StopTimer()
					require.NoError(b, rn.close())
					require.Len(b, bk.applied(b), n)
					b.StartTimer()
				}
				b.ReportMetric(float64(n*b.N)/total.Seconds(), "msgs/s")
			})
		}
	}
}

// publishParallel publishes n events on 8 goroutines.
func publishParallel(t testing.TB, queue string, n int) {
	t.Helper()
	pub := newPublisher(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs <- pub.Publish(queue, event(fmt.Sprintf("E%d", i)))
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
