package chainplan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrInputFile reports an input path that names no regular file with content: a
// directory, a named pipe, a device or socket, an empty file, or one that cannot be read.
// It is bad input (the CLI's exit status 2).
var ErrInputFile = errors.New("chainplan: unusable input file")

// InputError describes an input file that ReadInput refused: the path as given, what it
// is instead of the file wanted, and what was wanted.
type InputError struct {
	Path string
	Is   string // "is a directory", "is empty", "no such file or directory", ...
	Want string // "a chain file (chainplan.chain/v1 JSON)", ...
	Err  error  // the system's error, when there is one
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s: %s; want %s", e.Path, e.Is, e.Want)
}

// Unwrap makes errors.Is(err, ErrInputFile) true, and errors.Is(err, os.ErrNotExist) or
// os.ErrPermission for a file that is missing or not readable.
func (e *InputError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInputFile}
	}
	return []error{ErrInputFile, e.Err}
}

// ReadInput is the one way chainplan reads a file it was given (a chain, a bundle, a plan,
// a cluster, a profile, ...): the whole content of the regular file at path. want says
// what was expected, for the message. The path is looked at before it is opened, so that
// a named pipe, which would block the open until a writer came, is refused without
// waiting; a directory, a device, a socket and an empty file are refused too, each with
// an *InputError naming the path, what it is and what was wanted.
func ReadInput(path, want string) ([]byte, error) {
	refuse := func(is string, err error) error {
		return &InputError{Path: path, Is: is, Want: want, Err: err}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, refuse(systemReason(err), err)
	}
	if is := notRegular(fi.Mode()); is != "" {
		return nil, refuse(is, nil)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, refuse(systemReason(err), err)
	}
	defer f.Close()
	// The path may have been replaced between the look and the open: check what was
	// opened.
	if fi, err = f.Stat(); err != nil {
		return nil, refuse(systemReason(err), err)
	}
	if is := notRegular(fi.Mode()); is != "" {
		return nil, refuse(is, nil)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, refuse(systemReason(err), err)
	}
	if len(data) == 0 {
		return nil, refuse("is empty", nil)
	}
	return data, nil
}

// notRegular says what a file of mode m is when it is not a regular file, or "".
func notRegular(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "is a directory"
	case m&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO), not a regular file"
	case m&fs.ModeSocket != 0:
		return "is a socket, not a regular file"
	case m&fs.ModeDevice != 0:
		return "is a device, not a regular file"
	}
	return "is not a regular file"
}

// systemReason is the system's word for err without the path it repeats ("no such file
// or directory", "permission denied").
func systemReason(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
