module example.org/subs

go 1.26
