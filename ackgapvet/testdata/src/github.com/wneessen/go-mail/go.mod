module github.com/wneessen/go-mail

go 1.22
