package effect

import (
	"context"
	"database/sql"
	"errors"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// ErrAlreadyClaimed is what Journal.Claim answers when another delivery
// claimed the key first (a conditional write).
var ErrAlreadyClaimed = errors.New("already claimed")

// Journal claims a send by key.
type Journal interface {
	Claim(ctx context.Context, key string) error
}

// Surfaces archives a thread's row; Archive reports whether this caller
// made the change (a guarded transition).
type Surfaces interface {
	Archive(ctx context.Context, id string) (bool, error)
}

type closer struct {
	surfaces Surfaces
	db       *sql.DB
	client   *http.Client
}

// closeThread posts only when it won the archive: a redelivery finds the
// row archived and posts nothing.
func (c *closer) closeThread(msg *message.Message) error {
	won, err := c.surfaces.Archive(msg.Context(), string(msg.Payload))
	if err != nil {
		return err
	}
	if !won {
		return nil
	}
	_, err = c.client.Post("https://chat.example/post", "text/plain", nil)
	return err
}

// sendClaimed posts only when its claim was not already taken (wave 18,
// Pennsieve/email-service): a redelivery gets ErrAlreadyClaimed and skips.
func (c *closer) sendClaimed(j Journal, msg *message.Message) error {
	err := j.Claim(msg.Context(), msg.UUID)
	if errors.Is(err, ErrAlreadyClaimed) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = c.client.Post("https://mail.example/send", "text/plain", nil)
	return err
}

// shipOnce posts only when its guarded UPDATE changed a row.
func (c *closer) shipOnce(msg *message.Message) error {
	res, err := c.db.ExecContext(msg.Context(), "UPDATE orders SET state = 'shipped' WHERE id = $1 AND state = 'paid'", string(msg.Payload))
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	_, err = c.client.Post("https://ship.example/label", "text/plain", nil)
	return err
}

// lookupFirst reads before posting: a read is no guard.
func (c *closer) lookupFirst(msg *message.Message) error {
	ok, err := c.exists(msg.Context(), string(msg.Payload))
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	_, err = c.client.Post("https://chat.example/post", "text/plain", nil) // want `an HTTP request \(http.Client.Post\)`
	return err
}

func (c *closer) exists(ctx context.Context, id string) (bool, error) {
	var n int
	err := c.db.QueryRowContext(ctx, "SELECT count(*) FROM threads WHERE id = $1", id).Scan(&n)
	return n > 0, err
}

func registerCloser(r *message.Router, c *closer) {
	r.AddNoPublisherHandler("close", "t", nil, c.closeThread)
	r.AddNoPublisherHandler("ship", "t", nil, c.shipOnce)
	r.AddNoPublisherHandler("lookup", "t", nil, c.lookupFirst)
	r.AddNoPublisherHandler("mail", "t", nil, func(msg *message.Message) error { return c.sendClaimed(nil, msg) })
}
