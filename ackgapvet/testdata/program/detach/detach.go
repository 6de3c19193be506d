// Package detach starts a consumer's effects in goroutines, one per part
// of the message, below the function whose nil the loop commits on (field
// trial, wave 24: arda-notification H3, a `go` per inserted row two calls
// below the commit; wave 25: fintech-ecosystem H3).
package detach

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log"
	"net/http"
	"sync"

	"github.com/segmentio/kafka-go"
)

// Event is the message's payload.
type Event struct {
	ID    string   `json:"id"`
	Users []string `json:"users"`
}

// Service fans an event out to its users.
type Service struct {
	db *sql.DB
	c  *http.Client
}

func (s *Service) create(ctx context.Context, ids []string) ([]string, error) {
	for _, id := range ids {
		if _, err := s.db.ExecContext(ctx, "INSERT INTO deliveries (id) VALUES ($1) ON CONFLICT DO NOTHING", id); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (s *Service) send(ctx context.Context, id string) {
	resp, err := s.c.Post("https://mail.example/send", "text/plain", bytes.NewBufferString(id))
	if err != nil {
		log.Print(err)
		return
	}
	_ = resp.Body.Close()
}

// Fanout inserts a row per user, then mails each in its own goroutine and
// returns nil before any mail is sent.
func (s *Service) Fanout(ctx context.Context, ev Event) error {
	var ids []string
	for _, u := range ev.Users {
		ids = append(ids, ev.ID+":"+u)
	}
	inserted, err := s.create(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range inserted {
		go s.send(context.Background(), id)
	}
	return nil
}

// FanoutWait waits for its goroutines: the good twin.
func (s *Service) FanoutWait(ctx context.Context, ev Event) error {
	var wg sync.WaitGroup
	for _, u := range ev.Users {
		wg.Add(1)
		go func(u string) {
			defer wg.Done()
			s.send(ctx, ev.ID+":"+u)
		}(u)
	}
	wg.Wait()
	return nil
}

// Run commits each message after Fanout and FanoutWait, whatever they
// return.
func Run(ctx context.Context, r *kafka.Reader, s *Service) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		var ev Event
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			continue
		}
		_ = s.Fanout(ctx, ev)
		_ = s.FanoutWait(ctx, ev)
		_ = r.CommitMessages(ctx, m)
	}
}

// Flows runs each flow of an event in its own goroutine.
type Flows struct{ s *Service }

func (f *Flows) handle(ctx context.Context, m kafka.Message) error {
	var ev Event
	if err := json.Unmarshal(m.Value, &ev); err != nil {
		return err
	}
	for _, u := range ev.Users {
		go f.s.send(ctx, ev.ID+":"+u)
	}
	return nil
}

// Auto reads with ReadMessage, which commits as it returns (a GroupID).
func (f *Flows) Auto(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return
		}
		_ = f.handle(ctx, m)
	}
}

// Decoded hands a value its decoder chain filled from the message to a
// goroutine, then commits (field trial, wave 27: picket-answersheet H2).
func Decoded(ctx context.Context, r *kafka.Reader, s *Service) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		var ev Event
		if err := json.NewDecoder(bytes.NewReader(m.Value)).Decode(&ev); err != nil {
			continue
		}
		go s.send(ctx, ev.ID)
		_ = r.CommitMessages(ctx, m)
	}
}

// Queue hands decoded events to its workers.
type Queue struct{ events chan *Event }

// process decodes the message and hands the event over in a select case,
// returning nil there: the loop commits while the workers have not begun
// (field trial, wave 32: reservation-worker H1, whose loop deletes).
func (q *Queue) process(ctx context.Context, m kafka.Message) error {
	var ev Event
	if err := json.Unmarshal(m.Value, &ev); err != nil {
		return err
	}
	select {
	case q.events <- &ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RunQueue commits each message process accepted.
func RunQueue(ctx context.Context, r *kafka.Reader, q *Queue) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := q.process(ctx, m); err != nil {
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}
