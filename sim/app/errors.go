package app

import (
	"errors"
	"fmt"
)

// UsageError is a mistake in what the caller asked for (a flag, an
// argument, a spec), as opposed to a failure while doing it; the command
// line exits 2 for it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is, or wraps, a UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}
