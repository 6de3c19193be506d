package effect

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"google.golang.org/grpc"
)

// postsClient is a protoc-gen-go-grpc client: a read (GetPost) repeats
// nothing, a call that changes something (CreateVote) does (wave 14,
// redyx and Go-zero-IM: gRPC reads were reported as effects).
type postsClient interface {
	GetPost(ctx context.Context, in *postID, opts ...grpc.CallOption) (*post, error)
	CreateVote(ctx context.Context, in *postID, opts ...grpc.CallOption) (*post, error)
	UpsertTally(ctx context.Context, in *postID, opts ...grpc.CallOption) (*post, error)
}

// healthClient is grpc_health_v1's client: Check reads a status.
type healthClient interface {
	Check(ctx context.Context, in *postID, opts ...grpc.CallOption) (*post, error)
}

type postID struct{ ID string }

type post struct{ Author string }

func registerVotes(r *message.Router, c postsClient, h healthClient) {
	r.AddNoPublisherHandler("votes", "votes", nil, func(msg *message.Message) error {
		if _, err := h.Check(msg.Context(), &postID{}); err != nil { // clean: a health check reads
			return err
		}
		p, err := c.GetPost(msg.Context(), &postID{ID: string(msg.Payload)})
		if err != nil {
			return err
		}
		if _, err := c.UpsertTally(msg.Context(), &postID{ID: p.Author}); err != nil { // clean: an upsert by key (wave 18, Qdrant's PointsClient.Upsert)
			return err
		}
		_, err = c.CreateVote(msg.Context(), &postID{ID: p.Author}) // want `a gRPC call \(effect.postsClient.CreateVote\)`
		return err
	})
}
