package idemkey

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

func register(r *message.Router, client *http.Client, db *sql.DB) {
	r.AddNoPublisherHandler("charge", "orders", nil, func(msg *message.Message) error {
		ctx := msg.Context()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://pay.example/charges", nil) // want `critical: HTTP POST on the consumer path of watermill handler \(func literal\) without an Idempotency-Key header`
		if err != nil {
			return err
		}
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("charge-keyed", "orders", nil, func(msg *message.Message) error {
		req, err := http.NewRequestWithContext(msg.Context(), http.MethodPost, "https://pay.example/charges", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", msg.UUID) // clean
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("charge-helper", "orders", nil, func(msg *message.Message) error {
		req, err := http.NewRequest("POST", "https://pay.example/charges", nil)
		if err != nil {
			return err
		}
		withKey(req, msg.UUID) // clean: the key is set through a helper
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("status", "orders", nil, func(msg *message.Message) error {
		req, err := http.NewRequest(http.MethodPut, "https://runs.example/runs/1/status", nil) // clean: PUT is idempotent (RFC 9110, 9.2.2)
		if err != nil {
			return err
		}
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("lookup", "orders", nil, func(msg *message.Message) error {
		req, err := http.NewRequest(http.MethodGet, "https://pay.example/charges/1", nil) // clean: a GET
		if err != nil {
			return err
		}
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("score", "orders", nil, func(msg *message.Message) error {
		req, err := http.NewRequest(http.MethodPost, "https://fraud.example/api/v1/predict", nil) // clean: a model's prediction (a POST that asks)
		if err != nil {
			return err
		}
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("count", "orders", nil, func(msg *message.Message) error {
		_, err := db.ExecContext(context.Background(), "UPDATE counters SET hits = hits + 1 WHERE id = $1", msg.UUID) // want `medium: increments hits with no dedupe record in the same transaction`
		return err
	})
	r.AddNoPublisherHandler("debit", "payments", nil, func(msg *message.Message) error {
		_, err := db.ExecContext(context.Background(), "UPDATE accounts SET balance = balance - 5 WHERE id = $1", msg.UUID) // want `medium: decrements balance with no dedupe record in the same transaction`
		return err
	})
	r.AddNoPublisherHandler("count-upsert", "ratings", nil, func(msg *message.Message) error {
		// The upsert's own ON CONFLICT is not a dedupe record: it counts again.
		_, err := db.Exec("INSERT INTO ratings (id, n) VALUES ($1, 1) ON CONFLICT (id) DO UPDATE SET n = ratings.n + 1", msg.UUID) // want `medium: increments n with no dedupe record in the same transaction`
		return err
	})
	r.AddNoPublisherHandler("count-guarded", "orders", nil, func(msg *message.Message) error {
		_, err := db.ExecContext(context.Background(), "UPDATE orders SET seq = $1, version = version + 1 WHERE id = $2 AND seq = $1 - 1", 2, msg.UUID) // clean: a guarded transition
		return err
	})
	r.AddNoPublisherHandler("count-deduped", "orders", nil, func(msg *message.Message) error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		res, err := tx.Exec("INSERT INTO inbox (event_id) VALUES ($1) ON CONFLICT DO NOTHING", msg.UUID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if _, err := tx.Exec("UPDATE counters SET hits = hits + 1 WHERE id = $1", msg.UUID); err != nil { // clean: inbox row in the same tx
			return err
		}
		return tx.Commit()
	})
}

func withKey(req *http.Request, key string) { req.Header.Set("Idempotency-Key", key) }
