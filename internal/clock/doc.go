// Package clock is the small injectable clock that every timer-driven part of
// vipstack uses, so tests can move time forward without sleeping.
package clock
