package autocommit

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.mongodb.org/mongo-driver/mongo"
)

func readLoop(ctx context.Context, db *sql.DB) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{"k:9092"}, GroupID: "billing", Topic: "payments"})
	for {
		m, err := r.ReadMessage(ctx) // want `critical: ReadMessage commits the offset as it returns \(reader with a GroupID\), before the work \(a database write \(sql.DB.ExecContext\) at line \d+\)`
		if err != nil {
			return
		}
		_, _ = db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", m.Value)
	}
}

// fetchLoop commits after the work: clean.
func fetchLoop(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", m.Value); err != nil {
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// franz finishes each poll's records before it polls again: franz-go's
// default autocommit commits only what an earlier poll returned (field
// trial wave 14, redyx). Clean.
func franz(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"))
	if err != nil {
		return err
	}
	for {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			_, _ = db.ExecContext(ctx, "UPDATE orders SET state = 'seen'")
		})
	}
}

// producer has no consumer group: nothing to commit, clean.
func producer() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers("k:9092"))
}

func mongoLoop(ctx context.Context, coll *mongo.Collection) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{"k:9092"}, GroupID: "g", Topic: "events"})
	for {
		m, err := r.ReadMessage(ctx) // want `medium: ReadMessage commits the offset as it returns \(reader with a GroupID\), before the work \(a MongoDB write \(mongo.Collection.InsertOne\) at line \d+\)`
		if err != nil {
			return
		}
		_, _ = coll.InsertOne(ctx, m)
	}
}
