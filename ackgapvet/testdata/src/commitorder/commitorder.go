// Package commitorder holds consumers whose goroutines commit Kafka offsets
// out of order, and ones whose goroutines own their reader or partition.
package commitorder

import (
	"context"
	"database/sql"
	"sync"

	"github.com/IBM/sarama"
	"github.com/alitto/pond"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

type service struct {
	db     *sql.DB
	reader *kafka.Reader
}

// A pool of workers over one reader, started as methods: each commits what
// it finished.
func (s *service) consume(ctx context.Context, cfg kafka.ReaderConfig, workers int) {
	r := kafka.NewReader(cfg)
	wg := &sync.WaitGroup{}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go s.worker(ctx, r, wg) // want `starts goroutines in a loop that all fetch from r and each commits its own messages \(kafka.Reader.CommitMessages at line \d+\)`
	}
	wg.Wait()
}

func (s *service) worker(ctx context.Context, r *kafka.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if _, err := s.db.ExecContext(ctx, "INSERT INTO products (body) VALUES ($1)", m.Value); err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// The same pool as closures over the service's reader field.
func (s *service) consumeField(ctx context.Context) {
	for i := 0; i < 4; i++ {
		go func() { // want `all fetch from s.reader`
			for {
				m, err := s.reader.FetchMessage(ctx)
				if err != nil {
					return
				}
				_, _ = s.db.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE id = $1", m.Value)
				_ = s.reader.CommitMessages(ctx, m)
			}
		}()
	}
}

// Workers ranging over one Sarama claim and marking their own messages.
type claimWorkers struct{ db *sql.DB }

func (claimWorkers) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (claimWorkers) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h claimWorkers) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { // want `all fetch from claim`
			defer wg.Done()
			for msg := range claim.Messages() {
				_, _ = h.db.Exec("INSERT INTO events (body) VALUES ($1)", msg.Value)
				sess.MarkMessage(msg, "")
			}
		}()
	}
	wg.Wait()
	return nil
}

// A goroutine per message that commits its own record (franz-go).
func perRecord(ctx context.Context, cl *kgo.Client, db *sql.DB) {
	for {
		fetches := cl.PollFetches(ctx)
		for _, rec := range fetches {
			go func(rec kgo.Record) { // want `starts a goroutine per message that marks or commits its own message \(kgo.Client.CommitRecords at line \d+\)`
				_, _ = db.ExecContext(ctx, "INSERT INTO rows (v) VALUES ($1)", rec.Value)
				_ = cl.CommitRecords(ctx, &rec)
			}(rec)
		}
	}
}

// A worker pool's task per message that commits its own record (wave 17,
// event-stream-aggr: pool.Submit(func() { ...; CommitMessage })).
func perRecordPool(ctx context.Context, cl *kgo.Client, db *sql.DB, p *pond.WorkerPool) {
	for {
		fetches := cl.PollFetches(ctx)
		for _, rec := range fetches {
			p.Submit(func() { // want `starts a goroutine per message that marks or commits its own message \(kgo.Client.CommitRecords at line \d+\)`
				_, _ = db.ExecContext(ctx, "INSERT INTO rows (v) VALUES ($1)", rec.Value)
				_ = cl.CommitRecords(ctx, &rec)
			})
		}
	}
}

// Not reported: a pool task that commits nothing (the loop commits).
func poolNoCommit(ctx context.Context, cl *kgo.Client, db *sql.DB, p *pond.WorkerPool) {
	for {
		fetches := cl.PollFetches(ctx)
		for _, rec := range fetches {
			p.Submit(func() {
				_, _ = db.ExecContext(ctx, "INSERT INTO rows (v) VALUES ($1)", rec.Value)
			})
		}
	}
}

// Not reported: each goroutine makes its own reader (the group gives each
// its own partitions).
func ownReaders(ctx context.Context, cfg kafka.ReaderConfig, db *sql.DB) {
	for i := 0; i < 4; i++ {
		go func() {
			r := kafka.NewReader(cfg)
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					return
				}
				_, _ = db.ExecContext(ctx, "INSERT INTO rows (v) VALUES ($1)", m.Value)
				_ = r.CommitMessages(ctx, m)
			}
		}()
	}
}

// Not reported: one goroutine per partition consumer, each marking its own
// partition's messages in order.
func perPartition(c sarama.Consumer, om sarama.PartitionOffsetManager, db *sql.DB) {
	for _, p := range []int32{0, 1, 2} {
		pc, _ := c.ConsumePartition("orders", p, 0)
		go func(pc sarama.PartitionConsumer) {
			for msg := range pc.Messages() {
				_, _ = db.Exec("INSERT INTO rows (v) VALUES ($1)", msg.Value)
				om.MarkOffset(msg.Offset+1, "")
			}
		}(pc)
	}
}

// Not reported: the loop processes in goroutines but commits itself, after
// waiting, in order.
func waitThenCommit(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = db.ExecContext(ctx, "INSERT INTO rows (v) VALUES ($1)", m.Value)
		}()
		wg.Wait()
		_ = r.CommitMessages(ctx, m)
	}
}

// Worker is a pool worker given by the caller.
type Worker func(ctx context.Context, r *kafka.Reader, wg *sync.WaitGroup, id int)

// A pool of workers given as a function value, all handed one reader.
func consumeWith(ctx context.Context, cfg kafka.ReaderConfig, workers int, worker Worker) {
	r := kafka.NewReader(cfg)
	wg := &sync.WaitGroup{}
	for i := 0; i <= workers; i++ {
		wg.Add(1)
		go worker(ctx, r, wg, i) // want `starts goroutines in a loop that all get the reader r`
	}
	wg.Wait()
}

// Each worker gets a reader of its own: clean.
func consumeOwn(ctx context.Context, cfg kafka.ReaderConfig, workers int, worker Worker) {
	wg := &sync.WaitGroup{}
	for i := 0; i <= workers; i++ {
		r := kafka.NewReader(cfg)
		wg.Add(1)
		go worker(ctx, r, wg, i)
	}
	wg.Wait()
}
