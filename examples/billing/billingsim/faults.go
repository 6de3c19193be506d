package billingsim

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// errSimulatedCrash is what the fault middleware returns after a commit,
// in place of the ack.
var errSimulatedCrash = errors.New("simulated crash after commit, before ack")

// faults is the outermost middleware (router.Config.Middlewares): it
// counts broker deliveries, and on the first delivery of a selected event
// turns the chain's nil (committed) into an error. The router's retry and
// dead-letter steps sit inside it, so the error reaches Watermill, which
// nacks, and the broker delivers the message again: the redelivery a crash
// between commit and ack causes.
type faults struct {
	deliveries atomic.Int64
	crashes    atomic.Int64
	crashIDs   map[string]bool
	crashed    sync.Map
}

func (f *faults) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		f.deliveries.Add(1)
		produced, err := h(msg)
		if err != nil {
			return produced, err
		}
		if id := msg.Metadata.Get(ackgap.MetadataEventIDKey); f.crashIDs[id] {
			if _, again := f.crashed.LoadOrStore(id, true); !again {
				f.crashes.Add(1)
				return nil, errSimulatedCrash
			}
		}
		return produced, nil
	}
}

// errInstanceCrashed is what the crashed instance's hung handler finally
// returns, to a router and a subscriber that have already let go of the
// message: nothing acks it.
var errInstanceCrashed = errors.New("router instance crashed after the commit, before the ack")

// instanceCrash is Options.CrashRestart. Its middleware, outermost in
// every instance, lets one delivery commit and then never return to the
// router while the instance is alive: the ack never comes, as when the
// process dies in the ack gap. run then closes that instance (its
// subscriber gives the message up after SubscriberCloseTimeout, unacked)
// and starts a replacement.
type instanceCrash struct {
	t *tally
	// after is how many events must be applied before the crash.
	after int
	// crashed receives the instance that crashed, once.
	crashed chan *instance
}

func (c *instanceCrash) middleware(inst *instance) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err != nil || !c.t.takeForCrash(msg.Metadata.Get(ackgap.MetadataEventIDKey), c.after) {
				return produced, err
			}
			// Committed. The instance dies here: no ack, no nack.
			c.crashed <- inst
			<-inst.sub.gone // its subscriber let go of the message, unacked
			return nil, errInstanceCrashed
		}
	}
}
