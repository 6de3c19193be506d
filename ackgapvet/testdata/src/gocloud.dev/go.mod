module gocloud.dev

go 1.22
