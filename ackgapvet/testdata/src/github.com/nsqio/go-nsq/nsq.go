// Package nsq is a stub of github.com/nsqio/go-nsq: only the names the
// checker reads.
package nsq

// Message is an NSQ message.
type Message struct {
	Body     []byte
	Attempts uint16
}

// Finish marks the message done.
func (m *Message) Finish() {}

// Requeue asks nsqd to deliver the message again.
func (m *Message) Requeue(delay int64) {}

// Handler handles one message: nil finishes it, an error requeues it.
type Handler interface {
	HandleMessage(message *Message) error
}

// HandlerFunc is a function that is a Handler.
type HandlerFunc func(message *Message) error

// HandleMessage calls h.
func (h HandlerFunc) HandleMessage(m *Message) error { return h(m) }

// Config configures a consumer.
type Config struct{ MaxAttempts uint16 }

// NewConfig returns the defaults.
func NewConfig() *Config { return &Config{MaxAttempts: 5} }

// Consumer reads a topic's channel.
type Consumer struct{}

// NewConsumer makes a consumer.
func NewConsumer(topic, channel string, config *Config) (*Consumer, error) { return &Consumer{}, nil }

// AddHandler runs handler for each message.
func (c *Consumer) AddHandler(handler Handler) {}

// AddConcurrentHandlers runs concurrency copies of handler.
func (c *Consumer) AddConcurrentHandlers(handler Handler, concurrency int) {}
