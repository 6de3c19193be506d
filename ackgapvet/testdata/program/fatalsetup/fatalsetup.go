// Package fatalsetup ends the process when its set-up fails, once, before
// the loop that calls another package's receive wrapper: no message is in
// hand, so poison has nothing to say (field trial, wave 33: video-api's
// main, reported before).
package fatalsetup

import (
	"context"
	"database/sql"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"example.com/program/fatalsetup/queue"
)

// Run opens the database, then processes batches until ctx ends.
func Run(ctx context.Context, c *sqs.Client, url *string) {
	db, err := sql.Open("postgres", "")
	if err != nil {
		log.Fatal(err)
	}
	w := &queue.Worker{C: c, DB: db}
	for ctx.Err() == nil {
		if err := w.ProcessMessages(ctx, url); err != nil {
			log.Println(err)
		}
	}
}
