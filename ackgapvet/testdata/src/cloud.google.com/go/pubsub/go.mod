module cloud.google.com/go/pubsub

go 1.26
