module github.com/ThreeDotsLabs/watermill

go 1.26
