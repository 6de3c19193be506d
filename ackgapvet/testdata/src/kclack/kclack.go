// Package kclack consumes a Kinesis stream with a vmware-go-kcl record
// processor (field trial wave 14, baker): ProcessRecords is the entry
// point, and the checkpoint is its ack.
package kclack

import (
	"database/sql"
	"log"

	"github.com/vmware/vmware-go-kcl/clientlibrary/interfaces"
)

type processor struct{ db *sql.DB }

func (p *processor) Initialize(*interfaces.InitializationInput) {}

func (p *processor) ProcessRecords(in *interfaces.ProcessRecordsInput) {
	for _, r := range in.Records {
		if _, err := p.db.Exec("INSERT INTO events (body) VALUES ($1)", r.Data); err != nil {
			log.Println(err)
		}
	}
	last := in.Records[len(in.Records)-1].SequenceNumber
	_ = in.Checkpointer.Checkpoint(last) // want `acks with interfaces.IRecordProcessorCheckpointer.Checkpoint even when p.db.Exec failed \(line 19\).*checkpoint only up to the record before it`
}

func (p *processor) Shutdown(*interfaces.ShutdownInput) {}

var _ interfaces.IRecordProcessor = (*processor)(nil)
