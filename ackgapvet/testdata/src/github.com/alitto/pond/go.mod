module github.com/alitto/pond

go 1.22
