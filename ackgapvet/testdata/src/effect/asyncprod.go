package effect

import (
	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
)

// forwardAsync publishes the status through Sarama's AsyncProducer (wave
// 21, grocery-delivery-app's PaymentStatus): a redelivery publishes again.
func forwardAsync(r *message.Router, p sarama.AsyncProducer) {
	r.AddNoPublisherHandler("status", "payments", nil, func(msg *message.Message) error {
		p.Input() <- &sarama.ProducerMessage{Topic: "PaymentStatus"} // want `a publish \(sarama.AsyncProducer.Input\)`
		return nil
	})
}
