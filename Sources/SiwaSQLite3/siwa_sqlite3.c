// The declarations in include/siwa_sqlite3.h are resolved to SQLiteNIO's copy of SQLite at link time; this target has
// no code of its own (a C target needs one source file).
#include "siwa_sqlite3.h"
