module github.com/alitto/pond/v2

go 1.22
