module gorm.io/gen

go 1.26
