package effect

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/qiniu/qmgo"
	"github.com/valyala/fasthttp"
)

// more uses clients met in the field trial (wave 6): fasthttp, a
// CloudEvents client; qmgo writes are database writes, not effects.
type more struct {
	http *fasthttp.Client
	ce   cloudevents.Client
	col  *qmgo.Collection
}

func (m *more) handle(msg *message.Message) error {
	if _, err := m.col.InsertOne(context.Background(), msg.Payload); err != nil {
		return err
	}
	if err := m.http.Do(&fasthttp.Request{}, &fasthttp.Response{}); err != nil { // want `an HTTP request \(fasthttp.Client.Do\)`
		return err
	}
	return m.ce.Send(msg.Context(), cloudevents.Event{}) // want `a publish \(v2.Client.Send\)`
}

func registerMore(r *message.Router, m *more) {
	r.AddNoPublisherHandler("more", "in", nil, m.handle)
}
