// Package confmap polls with a ConfigMap another package built.
package confmap

import (
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"example.com/program/confmap/kconf"
	"example.com/program/confmap/kconfoff"
)

// Run applies each run event, then commits; librdkafka has committed the
// polled offset in the background already.
func Run(db *sql.DB) {
	m := kconf.New().ConsumerConfig("playbook-runs")
	c, err := kafka.NewConsumer(&m)
	if err != nil {
		log.Fatal(err)
	}
	for {
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			if _, err := db.Exec("UPDATE runs SET status = $1 WHERE id = 1", string(e.Value)); err != nil {
				return
			}
			if _, err := c.Commit(); err != nil {
				return
			}
		}
	}
}

// RunManual polls with the background commit off and commits after the
// work (not reported).
func RunManual(db *sql.DB) {
	c, err := kafka.NewConsumer(kconfoff.ManualConfig("inventory"))
	if err != nil {
		log.Fatal(err)
	}
	for {
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			if _, err := db.Exec("UPDATE devices SET seen = now() WHERE id = 1", string(e.Value)); err != nil {
				return
			}
			if _, err := c.CommitMessage(e); err != nil {
				return
			}
		}
	}
}
