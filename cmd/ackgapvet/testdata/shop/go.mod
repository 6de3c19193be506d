module example.com/shop

go 1.26

require github.com/ThreeDotsLabs/watermill v1.5.2

replace github.com/ThreeDotsLabs/watermill => ../../../../ackgapvet/testdata/src/github.com/ThreeDotsLabs/watermill
