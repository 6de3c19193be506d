module github.com/aws/aws-lambda-go

go 1.26
