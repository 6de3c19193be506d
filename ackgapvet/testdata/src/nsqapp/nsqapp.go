// Package nsqapp has go-nsq handlers (field trial, wave 53: goim's
// transfer consumer): a function converted to nsq.HandlerFunc is an entry
// point whose nil return finishes the message.
package nsqapp

import (
	"database/sql"
	"log"

	"github.com/nsqio/go-nsq"
)

func run(db *sql.DB) {
	c, _ := nsq.NewConsumer("transfer", "job", nsq.NewConfig())
	c.AddHandler(nsq.HandlerFunc(func(m *nsq.Message) error {
		if _, err := db.Exec("UPDATE users SET seq = seq + 1 WHERE id = $1", string(m.Body)); err != nil { // want `when db.Exec fails \(line 16\) the error is only recorded and the function goes on to return no error \(line 19\): the go-nsq handler acks the message`
			log.Printf("seq: %v", err)
		}
		return nil
	}))
}
