module example.com/programshared

go 1.26

require github.com/segmentio/kafka-go v0.4.0

replace github.com/segmentio/kafka-go => ../src/github.com/segmentio/kafka-go
