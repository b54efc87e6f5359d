package app

import (
	"errors"
	"fmt"
)

// UsageError is a mistake in what the caller asked for (a flag, an
// argument, a spec), as opposed to a failure while doing it; the command
// line exits 2 for it.
type UsageError struct {
	Msg string
	Err error // the refusal it carries, if any (errors.Is sees through)
}

func (e *UsageError) Error() string { return e.Msg }

// Unwrap returns the refusal the usage error carries.
func (e *UsageError) Unwrap() error { return e.Err }

// usage makes a UsageError of a refusal, with its message.
func usage(err error) error { return &UsageError{Msg: err.Error(), Err: err} }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is, or wraps, a UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}
