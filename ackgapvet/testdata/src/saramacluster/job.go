// Package saramacluster consumes with sarama-cluster: it marks each message
// before pushing it on.
package saramacluster

import (
	"net/http"

	cluster "github.com/bsm/sarama-cluster"
)

type job struct {
	consumer *cluster.Consumer
	client   *http.Client
}

func (j *job) Consume() {
	for {
		select {
		case msg, ok := <-j.consumer.Messages():
			if !ok {
				return
			}
			j.consumer.MarkOffset(msg, "") // want `acks with cluster.Consumer.MarkOffset before the work`
			_, _ = j.client.Post("http://comet.local/push", "application/octet-stream", nil)
		}
	}
}
