// Package sleepwrapped passes its handler through a wrapper in another
// package: the wrapper's handler type carries a fact.
package sleepwrapped

import (
	"time"

	"example.com/wrapper"
)

func process(value []byte) error {
	time.Sleep(time.Second) // want `time.Sleep on the consumer path of Sarama ConsumeClaim process`
	return nil
}

func setup() *wrapper.Group { return wrapper.New(process) }

// notAHandler is never passed as a wrapper.Handler: clean.
func notAHandler() { time.Sleep(time.Second) }
