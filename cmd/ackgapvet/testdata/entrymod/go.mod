module example.com/entrymod

go 1.26
