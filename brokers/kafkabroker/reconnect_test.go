package kafkabroker_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// TestReconnectAcrossBrokerRestart is the scenario of Watermill's
// TestReconnect (issue 22, item 6): one subscription and 50 publishing
// goroutines on one topic, the broker restarted after a third and after
// half of the messages were handed to the publishers. Watermill's own
// TestReconnect cannot run reliably (runWatermillSuite says why); this one
// holds under the race detector and runs for both subscribers.
//
// The broker is a restartableKfake (a real restart of a kfake process
// that keeps its data; see there), restarted by the command that would be
// Watermill's RestartServiceCommand. Messages after a restart point are
// published only once that restart stopped the broker, so both restarts
// happen with publishers and the subscriber at work; the publishers retry
// a failed publish, as Watermill's do (how many failed is logged, not
// asserted: Sarama's own retries may outlast the downtime). It asserts
// that both restarts completed, that every message whose publish returned
// nil was received by the subscription opened before the first restart
// (duplicates are allowed: at-least-once), and that nothing else was
// received. It gives up after
// 90 s (a normal run takes about 8 s under -race).
func TestReconnectAcrossBrokerRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		newSub func(brokers []string, group string) (message.Subscriber, error)
	}{
		{"Subscriber", func(brokers []string, group string) (message.Subscriber, error) {
			return kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: group,
				CloseTimeout: time.Second, SessionTimeout: 2 * time.Second}, testLogger())
		}},
		{"ParallelSubscriber", func(brokers []string, group string) (message.Subscriber, error) {
			return kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
				Brokers: brokers, ConsumerGroup: group, CloseTimeout: time.Second, SessionTimeout: 2 * time.Second,
			}}, testLogger())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testReconnect(t, tc.newSub)
		})
	}
}

func testReconnect(t *testing.T, newSub func(brokers []string, group string) (message.Subscriber, error)) {
	const (
		messages   = 5000
		publishers = 50
	)
	// Message restartAt[n] starts restart n+1; later messages are
	// published only once that restart stopped the old process, so every
	// restart happens with publishers and the subscriber at work.
	restartAt := []int{messages / 3, messages / 2}
	broker := newRestartableKfake(t)
	brokers := []string{broker.Addr}
	topic, group := unique("reconnect"), unique("reconnect")

	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, testLogger())
	require.NoError(t, err)
	defer func() { require.NoError(t, pub.Close()) }()
	sub, err := newSub(brokers, group)
	require.NoError(t, err)
	defer func() { require.NoError(t, sub.Close()) }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)

	var (
		mu        sync.Mutex
		published = map[string]bool{} // publish returned nil
		attempted = map[string]bool{} // handed to Publish at least once
		failures  atomic.Int64        // failed Publish calls, retried
		next      atomic.Int64
		pubs      sync.WaitGroup
		restarts  sync.WaitGroup
		stop      = make(chan struct{}) // closed when the test ends: publishers give up
	)
	// Every goroutine ends before the subscriber and publisher close.
	defer func() {
		close(stop)
		pubs.Wait()
		restarts.Wait() // bounded by restartBound each
	}()
	restart := func() {
		defer restarts.Done()
		argv := broker.Command() // what Watermill's TestReconnect runs
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Errorf("restart command: %v: %s", err, out)
		}
	}
	// wait blocks message i until the restarts it must follow stopped the
	// broker; false if the test ended first.
	wait := func(i int) bool {
		for n, at := range restartAt {
			if i > at {
				select {
				case <-broker.Stopped(n + 1):
				case <-stop:
					return false
				}
			}
		}
		return true
	}
	for range publishers {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= messages {
					return
				}
				if slices.Contains(restartAt, i) {
					restarts.Add(1)
					go restart()
				}
				if !wait(i) {
					return
				}
				id := fmt.Sprintf("r-%05d", i)
				mu.Lock()
				attempted[id] = true
				mu.Unlock()
				for {
					msg := message.NewMessage(id, []byte("x"))
					msg.Metadata.Set(ackgap.MetadataEventIDKey, id)
					if err := pub.Publish(topic, msg); err == nil {
						break
					}
					failures.Add(1)
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
				mu.Lock()
				published[id] = true
				mu.Unlock()
			}
		}()
	}

	received := map[string]bool{}
	deliveries := 0
	var unexpected []string
	deadline := time.After(90 * time.Second)
	for len(received) < messages {
		select {
		case msg, ok := <-msgs:
			require.True(t, ok, "the subscription closed after %d of %d messages", len(received), messages)
			mu.Lock()
			if !attempted[msg.UUID] {
				unexpected = append(unexpected, msg.UUID)
			}
			mu.Unlock()
			received[msg.UUID] = true
			deliveries++
			msg.Ack()
		case <-deadline:
			mu.Lock()
			var missing []string
			for id := range published {
				if !received[id] {
					missing = append(missing, id)
				}
			}
			npub := len(published)
			mu.Unlock()
			slices.Sort(missing)
			t.Fatalf("after 90s: received %d of %d messages (%d published, %d failed publishes retried, %d restarts done); "+
				"published and not received (first 10 of %d): %v", len(received), messages, npub, failures.Load(),
				broker.Restarts(), len(missing), missing[:min(10, len(missing))])
		}
	}
	pubs.Wait()
	restarts.Wait()
	require.Empty(t, unexpected, "received messages that were never published")
	require.Len(t, published, messages, "every publish eventually succeeded")
	for id := range published {
		require.True(t, received[id], "message %s was published and never received", id)
	}
	require.Equal(t, len(restartAt), broker.Restarts(), "every restart completed")
	t.Logf("%d messages through %d broker restarts: %d deliveries (%d again), %d failed publishes retried",
		messages, broker.Restarts(), deliveries, deliveries-messages, failures.Load())
}
