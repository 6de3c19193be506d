module github.com/aws/aws-sdk-go-v2

go 1.26
