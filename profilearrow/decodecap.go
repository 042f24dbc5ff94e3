package profilearrow

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MaxDecodedBytes bounds the memory a file may make the reader allocate (decompressed
// buffers included), so that a corrupt length field cannot exhaust memory: a file of n
// bytes may decode to at most min(MaxDecodedBytes, 1 MiB + 1024·n) bytes. That is far above
// any real profile: a 1,000-stage profile with 20 repetitions decodes to about 2 MiB from
// about 1 MiB of LZ4-compressed file, since measured times hardly compress.
const MaxDecodedBytes = 1 << 30

// decodeLimit returns the allocation limit for a file of n bytes (see MaxDecodedBytes).
func decodeLimit(n int) int64 {
	return min(MaxDecodedBytes, 1<<20+1024*int64(n))
}

// cappedAllocator refuses to allocate more than limit bytes in all, so that a corrupt
// length field makes Read fail instead of exhausting memory.
type cappedAllocator struct {
	mem   memory.Allocator
	used  atomic.Int64
	limit int64
}

var _ memory.Allocator = (*cappedAllocator)(nil)

// errTooLarge is the panic value of a refused allocation; Read recovers it.
type errTooLarge struct{ size, limit int64 }

func (e errTooLarge) String() string {
	return fmt.Sprintf("the file declares more than %d bytes of decoded data (allocating %d more)", e.limit, e.size)
}

func (a *cappedAllocator) take(n int) {
	if n < 0 || a.used.Add(int64(n)) > a.limit {
		panic(errTooLarge{int64(n), a.limit})
	}
}

func (a *cappedAllocator) Allocate(size int) []byte {
	a.take(size)
	return a.mem.Allocate(size)
}

func (a *cappedAllocator) Reallocate(size int, b []byte) []byte {
	a.take(size)
	return a.mem.Reallocate(size, b)
}

func (a *cappedAllocator) Free(b []byte) { a.mem.Free(b) }
