module example.org/retry

go 1.26
