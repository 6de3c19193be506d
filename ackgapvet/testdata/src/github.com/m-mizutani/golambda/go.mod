module github.com/m-mizutani/golambda

go 1.26
