// Package events holds the events of cqrsiface.
package events

// BookingMade says a booking was made.
type BookingMade struct{ ID string }
