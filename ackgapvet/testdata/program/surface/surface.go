// Package surface posts to a chat thread behind a guarded transition: the
// post runs only for the caller that archived the thread, so a redelivery
// posts nothing. The mirror posts on every delivery.
package surface

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Store archives a thread's row and says whether this caller did it.
type Store interface {
	Archive(ctx context.Context, id string) (bool, error)
}

// Poster posts the resolution of a thread.
type Poster struct{ C *http.Client }

// Post is reached only behind Manager.Close's guard.
func (p *Poster) Post(text string) error {
	_, err := p.C.Post("https://chat.example/resolution", "text/plain", nil)
	return err
}

// Mirror copies messages to another chat.
type Mirror struct{ C *http.Client }

// Post is reached behind the guard and without it.
func (m *Mirror) Post(text string) error {
	_, err := m.C.Post("https://chat.example/mirror", "text/plain", nil)
	return err
}

// Manager closes threads.
type Manager struct {
	S Store
	P *Poster
	M *Mirror
}

// Close posts only when it archived the thread.
func (m *Manager) Close(ctx context.Context, id string) error {
	won, err := m.S.Archive(ctx, id)
	if err != nil {
		return err
	}
	if !won {
		return nil // a concurrent or earlier close did it
	}
	if err := m.P.Post("closed"); err != nil {
		return err
	}
	return m.M.Post("closed")
}

// OnClosed is a Watermill handler.
func (m *Manager) OnClosed(msg *message.Message) error {
	return m.Close(msg.Context(), string(msg.Payload))
}

// OnMirror is a Watermill handler that mirrors every message.
func (m *Manager) OnMirror(msg *message.Message) error {
	return m.M.Post(string(msg.Payload))
}
