// Package gormgen writes orders through gorm.io/gen's generated queries
// (field trial, wave 38: seckill-service): a plain Create appends a row per
// delivery; one chained after Clauses (an ON CONFLICT) does not.
package gormgen

import (
	"context"

	"example.com/program/gormgen/query"
	"github.com/segmentio/kafka-go"
)

// GenOrders stores each order.
func GenOrders(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := query.Orders.WithContext(ctx).Create(&query.Order{No: string(m.Value)}); err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// GenUpserts stores each order once.
func GenUpserts(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := query.Orders.WithContext(ctx).Clauses("ON CONFLICT DO NOTHING").Create(&query.Order{No: string(m.Value)}); err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}
