// Package zeromon is a go-queue kq handler that stores each chat message
// through go-zero's MongoDB client (field trial, wave 37: easy-chat's
// MsgChatTransfer).
package zeromon

import (
	"context"
	"time"

	"github.com/zeromicro/go-queue/kq"
	"github.com/zeromicro/go-zero/core/stores/mon"
)

// ChatLog is a stored chat message.
type ChatLog struct {
	Conversation string    `bson:"conversation"`
	Body         string    `bson:"body"`
	At           time.Time `bson:"at"`
}

// Transfer stores chat messages.
type Transfer struct{ logs *mon.Model }

// Consume inserts the message: a redelivery inserts it again.
func (t *Transfer) Consume(ctx context.Context, key, value string) error {
	_, err := t.logs.InsertOne(ctx, &ChatLog{Conversation: key, Body: value, At: time.Now()})
	return err
}

// Main starts the queues: chat with kq's default of 8 processors, each
// committing its own message; receipts and mentions with one processor;
// reads and audit with commits in partition order (the KqConf in a
// variable too).
func Main() {
	logs := mon.MustNewModel("mongodb://localhost", "chat", "logs")
	kq.MustNewQueue(kq.KqConf{Topic: "chat"}, &Transfer{logs: logs}).Start()
	kq.MustNewQueue(kq.KqConf{Topic: "receipts", Processors: 1}, &Transfer{logs: logs}).Start()
	kq.MustNewQueue(kq.KqConf{Topic: "reads", Processors: 8, CommitInOrder: true}, &Transfer{logs: logs}).Start()
	audit := kq.KqConf{Topic: "audit", CommitInOrder: true}
	kq.MustNewQueue(audit, &Transfer{logs: logs}).Start()
	mentions := kq.KqConf{Topic: "mentions"}
	mentions.Processors = 1
	kq.MustNewQueue(mentions, &Transfer{logs: logs}).Start()
}
