module github.com/zeromicro/go-queue

go 1.26
