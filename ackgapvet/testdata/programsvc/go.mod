module ordersvc

go 1.26

require (
	github.com/acme/shop/queue v0.0.0
	github.com/aws/aws-sdk-go-v2 v1.0.0
)

replace github.com/acme/shop/queue => ../programqueue

replace github.com/aws/aws-sdk-go-v2 => ../src/github.com/aws/aws-sdk-go-v2
