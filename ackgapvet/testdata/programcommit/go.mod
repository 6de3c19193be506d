module example.com/programcommit

go 1.26

require github.com/IBM/sarama v1.45.0

replace github.com/IBM/sarama => ../src/github.com/IBM/sarama
