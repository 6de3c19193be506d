module example.com/program

go 1.26

require (
	gocloud.dev v0.1.0
	github.com/google/uuid v1.0.0
	github.com/wneessen/go-mail v1.0.0
	github.com/alitto/pond/v2 v2.0.0
	github.com/alitto/pond v1.0.0
	github.com/nats-io/nats.go v1.0.0
	github.com/hibiken/asynq v1.0.0
	github.com/rabbitmq/amqp091-go v1.0.0
	gorm.io/gen v1.0.0
	gorm.io/gorm v1.0.0
	cloud.google.com/go/pubsub v1.0.0
	example.com/programshared v0.0.0
	example.org/retry v0.0.0
	example.org/sqspoller v0.0.0
	example.org/sqswrap v0.0.0
	example.org/subs v0.0.0
	github.com/IBM/sarama v1.45.0
	github.com/ThreeDotsLabs/watermill v1.5.2
	github.com/aws/aws-lambda-go v1.0.0
	github.com/aws/aws-sdk-go-v2 v1.0.0
	github.com/confluentinc/confluent-kafka-go/v2 v2.0.0
	github.com/m-mizutani/golambda v1.0.2
	github.com/redis/go-redis/v9 v9.0.0
	github.com/segmentio/kafka-go v0.4.0
	github.com/twmb/franz-go v1.0.0
	github.com/zeromicro/go-queue v1.0.0
	github.com/zeromicro/go-zero v1.0.0
	go.opentelemetry.io/otel v1.0.0
	golang.org/x/sync v0.0.0
)

replace github.com/ThreeDotsLabs/watermill => ../src/github.com/ThreeDotsLabs/watermill

replace github.com/aws/aws-sdk-go-v2 => ../src/github.com/aws/aws-sdk-go-v2

replace github.com/zeromicro/go-queue => ../src/github.com/zeromicro/go-queue

replace github.com/segmentio/kafka-go => ../src/github.com/segmentio/kafka-go

replace github.com/twmb/franz-go => ../src/github.com/twmb/franz-go

replace golang.org/x/sync => ../src/golang.org/x/sync

replace go.opentelemetry.io/otel => ../src/go.opentelemetry.io/otel

replace github.com/confluentinc/confluent-kafka-go/v2 => ../src/github.com/confluentinc/confluent-kafka-go/v2

replace example.com/programshared => ../programshared

replace example.org/subs => ../src/example.org/subs

replace github.com/m-mizutani/golambda => ../src/github.com/m-mizutani/golambda

replace github.com/redis/go-redis/v9 => ../src/github.com/redis/go-redis/v9

replace example.org/retry => ../src/example.org/retry

replace github.com/IBM/sarama => ../src/github.com/IBM/sarama

replace example.org/sqspoller => ../src/example.org/sqspoller

replace github.com/aws/aws-lambda-go => ../src/github.com/aws/aws-lambda-go

replace github.com/zeromicro/go-zero => ../src/github.com/zeromicro/go-zero

replace cloud.google.com/go/pubsub => ../src/cloud.google.com/go/pubsub

replace gorm.io/gen => ../src/gorm.io/gen

replace gorm.io/gorm => ../src/gorm.io/gorm

replace github.com/rabbitmq/amqp091-go => ../src/github.com/rabbitmq/amqp091-go

replace github.com/hibiken/asynq => ../src/github.com/hibiken/asynq

replace github.com/nats-io/nats.go => ../src/github.com/nats-io/nats.go

replace github.com/alitto/pond => ../src/github.com/alitto/pond

replace github.com/alitto/pond/v2 => ../src/github.com/alitto/pond/v2

replace github.com/wneessen/go-mail => ../src/github.com/wneessen/go-mail

replace github.com/google/uuid => ../src/github.com/google/uuid

replace gocloud.dev => ../src/gocloud.dev

replace example.org/sqswrap => ../src/example.org/sqswrap
