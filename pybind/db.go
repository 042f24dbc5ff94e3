package pybind

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/store"
)

// maxOpen bounds the databases kept open at once: a process that plans into many files
// (a test suite, one database per test) closes the least recently used one beyond it.
const maxOpen = 8

// handle is one open database and the calls using it.
type handle struct {
	svc   *service.Service
	file  os.FileInfo // the file it opened, to notice a file removed or replaced since (nil for PostgreSQL)
	users int         // calls in flight
	used  uint64      // when it was last acquired, on the clock of dbs
	gone  bool        // out of dbs.open: closed when its last user releases it
}

// dbs keeps one open database per file for the life of the process: opening one checks
// and migrates its schema, which every call would otherwise repeat. A lock guards the map
// (opening included, so that two first calls on one file open it once); the databases
// themselves serve concurrent calls (store.DB).
var dbs = struct {
	sync.Mutex
	open  map[string]*handle
	clock uint64
	opens int // databases opened since the process started; the tests read it
}{open: map[string]*handle{}}

// dbDocument is the one spelling of the database in the bindings: {"db_env": $CHAINPLAN_DB
// as Python sees it now (a SQLite path or a PostgreSQL DSN), "home": the home folder}, the
// same fields as a source envelope's (service.Source), read by service.DBPath's rule (a
// Go runtime loaded into Python sees the environment of the moment it was loaded, so
// Python passes its own at each call). Both empty: this process's environment
// (service.DefaultDBPath).
type dbDocument struct {
	DBEnv string `json:"db_env"`
	Home  string `json:"home"`
}

// databasePath reads a database document and returns the database it names.
func databasePath(doc string) (string, error) {
	var d dbDocument
	if err := strictUnmarshal(doc, &d); err != nil {
		return "", badRequest(fmt.Errorf("database: %v", err))
	}
	return service.Source{DBEnv: d.DBEnv, Home: d.Home}.DB()
}

// DataDir returns the local folder of the files kept beside the database the document
// names (Python writes profiles to its profiles/ folder): the folder of a SQLite file,
// home/.chainplan for a PostgreSQL store (service.DataDir).
func DataDir(database string) (dir string, err error) {
	defer recoverError(&err)
	var d dbDocument
	if err := strictUnmarshal(database, &d); err != nil {
		return "", codedError(badRequest(fmt.Errorf("database: %v", err)))
	}
	path, err := databasePath(database)
	if err != nil {
		return "", codedError(err)
	}
	dir, err = service.DataDir(path, d.Home)
	return dir, codedError(err)
}

// withDatabase runs fn on the open database the document db names (see dbDocument).
func withDatabase(db string, create bool, fn func(ctx context.Context, s *service.Service) error) error {
	path, err := databasePath(db)
	if err != nil {
		return codedError(err)
	}
	return withService(path, create, fn)
}

// withService runs fn on the open database at path ("" means service.DefaultDBPath),
// opening it on first use; a database that does not exist is created only when create is
// set. fn's error comes back coded.
func withService(path string, create bool, fn func(ctx context.Context, s *service.Service) error) error {
	ctx := context.Background()
	h, err := acquire(ctx, path, create)
	if err != nil {
		return codedError(err)
	}
	defer release(h)
	return codedError(fn(ctx, h.svc))
}

// acquire returns the open database at path, opening it when it is not open yet or, for
// a SQLite file, when its file was removed or replaced since (a handle on a deleted file
// would keep writing where nobody reads). A PostgreSQL store is known by its DSN.
func acquire(ctx context.Context, path string, create bool) (*handle, error) {
	if path == "" {
		p, err := service.DefaultDBPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	key, postgres := path, store.IsPostgres(path)
	if !postgres {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", path, err)
		}
		key = abs
	}
	dbs.Lock()
	defer dbs.Unlock()
	dbs.clock++
	if h := dbs.open[key]; h != nil {
		if postgres {
			h.users++
			h.used = dbs.clock
			return h, nil
		}
		if fi, err := os.Stat(key); err == nil && os.SameFile(fi, h.file) {
			h.users++
			h.used = dbs.clock
			return h, nil
		}
		forget(key, h)
	}
	svc, err := service.Open(ctx, key, service.Options{Create: create, Version: Version})
	if err != nil {
		return nil, err
	}
	var fi os.FileInfo
	if !postgres {
		if fi, err = os.Stat(key); err != nil {
			svc.Close()
			return nil, fmt.Errorf("database %s: %w", key, err)
		}
	}
	if len(dbs.open) >= maxOpen {
		evictOldest()
	}
	h := &handle{svc: svc, file: fi, users: 1, used: dbs.clock}
	dbs.open[key] = h
	dbs.opens++
	return h, nil
}

// release ends one call's use of h.
func release(h *handle) {
	dbs.Lock()
	defer dbs.Unlock()
	h.users--
	if h.gone && h.users == 0 {
		h.svc.Close()
	}
}

// forget removes h from the open databases and closes it once no call uses it. The
// caller holds the lock.
func forget(abs string, h *handle) {
	delete(dbs.open, abs)
	h.gone = true
	if h.users == 0 {
		h.svc.Close()
	}
}

// evictOldest forgets the least recently acquired database. The caller holds the lock.
func evictOldest() {
	var oldest string
	for p, h := range dbs.open {
		if oldest == "" || h.used < dbs.open[oldest].used {
			oldest = p
		}
	}
	if oldest != "" {
		forget(oldest, dbs.open[oldest])
	}
}
