package idemkey

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// registerCharges adds each charge to the account's total with $inc and no
// record of the message (wave 18, distributed-faas H4): a redelivery adds
// it again. Setting the total is clean.
func registerCharges(r *message.Router, coll *mongo.Collection) {
	r.AddNoPublisherHandler("charges", "charges", nil, func(msg *message.Message) error {
		_, err := coll.UpdateOne(msg.Context(), bson.M{"_id": msg.UUID}, bson.M{"$inc": bson.M{"accumulated_amount": 5}}) // want `increments accumulated_amount with a MongoDB \$inc`
		return err
	})
	r.AddNoPublisherHandler("charges-d", "charges", nil, func(msg *message.Message) error {
		_, err := coll.UpdateOne(msg.Context(), bson.M{"_id": msg.UUID}, bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: 1}}}}) // want `increments count with a MongoDB \$inc`
		return err
	})
	r.AddNoPublisherHandler("totals", "charges", nil, func(msg *message.Message) error {
		_, err := coll.UpdateOne(msg.Context(), bson.M{"_id": msg.UUID}, bson.M{"$set": bson.M{"total": 5}}) // clean: sets the total
		return err
	})
}
