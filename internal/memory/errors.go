package memory

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an error so that every transport can map it once: to an HTTP
// status in the REST API and to the text prefix of an MCP tool error.
type Code string

// The error codes. Every error that reaches a client carries one of them.
const (
	CodeInvalid         Code = "invalid"
	CodeNotFound        Code = "not_found"
	CodeConflict        Code = "conflict"
	CodeForbidden       Code = "forbidden"
	CodeUnauthorized    Code = "unauthorized"
	CodeBudgetExhausted Code = "budget_exhausted"
	CodeTooLarge        Code = "too_large"
	CodeUnavailable     Code = "unavailable"
	CodeInternal        Code = "internal"
)

// Error is the one error type of Munin. Message is safe to show to the client;
// internal causes stay in Err and are logged, never sent.
type Error struct {
	Code    Code
	Message string
	Err     error
	// RetryAfter, when set, says how long until the call may succeed
	// (budget_exhausted); HTTP sends it as Retry-After.
	RetryAfter time.Duration
}

// Error renders "code: message", the form MCP tool errors start with.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap exposes the internal cause to errors.Is / errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds a client-facing error with the given code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Internal wraps an unexpected failure; the client only sees "internal: internal error".
func Internal(err error) *Error {
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}

// ErrorCode returns the code of err: the Code of the first *Error in its chain,
// CodeInternal for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// PublicMessage is what a client may see of err: "code: message" for an *Error,
// "internal: internal error" for anything else (details are logged, not sent).
func PublicMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != CodeInternal {
		return e.Error()
	}
	return "internal: internal error"
}

// PublicText is PublicMessage without the code, to restate it in
// another error (an OAuth error, a file's error): a client's error as
// written, anything else (an internal error, a foreign error) as "internal
// error", so nothing internal leaks.
func PublicText(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != CodeInternal {
		return e.Message
	}
	return "internal error"
}
