module github.com/acme/shop/queue

go 1.26

require github.com/aws/aws-sdk-go-v2 v1.0.0

replace github.com/aws/aws-sdk-go-v2 => ../src/github.com/aws/aws-sdk-go-v2
