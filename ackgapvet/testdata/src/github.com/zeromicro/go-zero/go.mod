module github.com/zeromicro/go-zero

go 1.26
