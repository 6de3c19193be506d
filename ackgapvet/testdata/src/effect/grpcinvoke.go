package effect

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"google.golang.org/grpc"
)

// relationClient is written as protoc-gen-go-grpc writes a client: each
// method invokes its full method name. Invoking a read (ListFollowing)
// repeats nothing (field trial, wave 42: fansX's relation reads).
type relationClient struct{ cc grpc.ClientConnInterface }

func (c *relationClient) listFollowing(ctx context.Context, in *postID) (*post, error) {
	out := new(post)
	err := c.cc.Invoke(ctx, "/relation.RelationService/listFollowing", in, out) // clean: a read (the proto names it lower-case)
	return out, err
}

func (c *relationClient) follow(ctx context.Context, in *postID) (*post, error) {
	out := new(post)
	err := c.cc.Invoke(ctx, "/relation.RelationService/Follow", in, out) // want `a gRPC call \(grpc.ClientConnInterface.Invoke\)`
	return out, err
}

func registerFollows(r *message.Router, c *relationClient) {
	r.AddNoPublisherHandler("follows", "follows", nil, func(msg *message.Message) error {
		if _, err := c.listFollowing(msg.Context(), &postID{ID: string(msg.Payload)}); err != nil {
			return err
		}
		_, err := c.follow(msg.Context(), &postID{ID: string(msg.Payload)})
		return err
	})
}
