module example.org/sqswrap

go 1.26

require github.com/aws/aws-sdk-go-v2 v1.0.0
