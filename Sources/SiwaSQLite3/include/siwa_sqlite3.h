// SQLite's C API, as far as siwa's SQLite writer uses it, from the copy of SQLite that SQLiteNIO already links.
//
// SQLiteNIO compiles SQLite's amalgamation into the process with every symbol prefixed `sqlite_nio_` (its
// `VaporCSQLite` target), but vends no C module of its own. siwa must not link a second SQLite: two copies in one
// process each keep their own table of POSIX locks, and closing a file in one releases the other's locks on the same
// database (https://www.sqlite.org/howtocorrupt.html, 2.2.1). So these are declarations of that copy's functions, as
// SQLite documents them (https://www.sqlite.org/c3ref/funclist.html); the linker resolves them to SQLiteNIO's.
#ifndef SIWA_SQLITE3_H
#define SIWA_SQLITE3_H

#include <stdint.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

#define SIWA_SQLITE_OK 0
#define SIWA_SQLITE_ROW 100
#define SIWA_SQLITE_DONE 101

#define SIWA_SQLITE_INTEGER 1
#define SIWA_SQLITE_FLOAT 2
#define SIWA_SQLITE_TEXT 3
#define SIWA_SQLITE_BLOB 4
#define SIWA_SQLITE_NULL 5

#define SIWA_SQLITE_OPEN_READWRITE 0x00000002
#define SIWA_SQLITE_OPEN_CREATE 0x00000004
#define SIWA_SQLITE_OPEN_NOMUTEX 0x00008000
#define SIWA_SQLITE_OPEN_EXRESCODE 0x02000000

#define SIWA_SQLITE_PREPARE_PERSISTENT 0x01

int sqlite_nio_sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
int sqlite_nio_sqlite3_close_v2(sqlite3 *db);
int sqlite_nio_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **statement,
                                  const char **tail);
int sqlite_nio_sqlite3_step(sqlite3_stmt *statement);
int sqlite_nio_sqlite3_reset(sqlite3_stmt *statement);
int sqlite_nio_sqlite3_clear_bindings(sqlite3_stmt *statement);
int sqlite_nio_sqlite3_finalize(sqlite3_stmt *statement);
int sqlite_nio_sqlite3_bind_int64(sqlite3_stmt *statement, int index, int64_t value);
int sqlite_nio_sqlite3_bind_double(sqlite3_stmt *statement, int index, double value);
int sqlite_nio_sqlite3_bind_text64(sqlite3_stmt *statement, int index, const char *text, uint64_t bytes,
                                   void (*destructor)(void *), unsigned char encoding);
int sqlite_nio_sqlite3_bind_blob64(sqlite3_stmt *statement, int index, const void *blob, uint64_t bytes,
                                   void (*destructor)(void *));
int sqlite_nio_sqlite3_bind_null(sqlite3_stmt *statement, int index);
int sqlite_nio_sqlite3_column_count(sqlite3_stmt *statement);
const char *sqlite_nio_sqlite3_column_name(sqlite3_stmt *statement, int column);
int sqlite_nio_sqlite3_column_type(sqlite3_stmt *statement, int column);
int64_t sqlite_nio_sqlite3_column_int64(sqlite3_stmt *statement, int column);
double sqlite_nio_sqlite3_column_double(sqlite3_stmt *statement, int column);
const unsigned char *sqlite_nio_sqlite3_column_text(sqlite3_stmt *statement, int column);
int sqlite_nio_sqlite3_column_bytes(sqlite3_stmt *statement, int column);
const void *sqlite_nio_sqlite3_column_blob(sqlite3_stmt *statement, int column);
const char *sqlite_nio_sqlite3_errmsg(sqlite3 *db);
int sqlite_nio_sqlite3_extended_errcode(sqlite3 *db);
int sqlite_nio_sqlite3_busy_timeout(sqlite3 *db, int milliseconds);
int sqlite_nio_sqlite3_get_autocommit(sqlite3 *db);
int sqlite_nio_sqlite3_exec(sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *argument,
                            char **error);

/// Binds text that SQLite copies (`SQLITE_TRANSIENT`), as UTF-8.
static inline int siwa_sqlite3_bind_text(sqlite3_stmt *statement, int index, const char *text, uint64_t bytes) {
    return sqlite_nio_sqlite3_bind_text64(statement, index, text, bytes, (void (*)(void *))-1, 1);
}

/// Binds a blob that SQLite copies (`SQLITE_TRANSIENT`).
static inline int siwa_sqlite3_bind_blob(sqlite3_stmt *statement, int index, const void *blob, uint64_t bytes) {
    return sqlite_nio_sqlite3_bind_blob64(statement, index, blob, bytes, (void (*)(void *))-1);
}

/// Runs statements without results (`PRAGMA`s, `BEGIN`, `COMMIT`).
static inline int siwa_sqlite3_exec(sqlite3 *db, const char *sql) {
    return sqlite_nio_sqlite3_exec(db, sql, 0, 0, 0);
}

#endif
