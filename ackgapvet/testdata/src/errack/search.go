package errack

import (
	"log"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/meilisearch/meilisearch-go"
)

// registerIndexer indexes each document in a search index (waves 34 and
// 35: kk-forum's Elasticsearch bulk, meilisearch-loader): a failed write
// only logged is acked and lost; a failed search only logged is not work.
func registerIndexer(r *message.Router, idx *meilisearch.Index) {
	r.AddNoPublisherHandler("index", "docs", nil, func(msg *message.Message) error {
		if _, err := idx.AddDocuments([]map[string]any{{"id": msg.UUID}}); err != nil {
			log.Print(err)
			return nil // want `returns without an error when idx.AddDocuments fails`
		}
		return nil
	})
	r.AddNoPublisherHandler("lookup", "docs", nil, func(msg *message.Message) error {
		if _, err := idx.Search(string(msg.Payload)); err != nil {
			log.Print(err)
			return nil
		}
		return nil
	})
}
