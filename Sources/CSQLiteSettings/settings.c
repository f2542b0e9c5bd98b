#include "CSQLiteSettings.h"

// sqlite-nio's vendored SQLite prefixes every symbol with `sqlite_nio_`; this is its `sqlite3_db_config`
// (`sqlite3 *` is passed through as an opaque pointer). The module links it through SQLiteNIO.
int sqlite_nio_sqlite3_db_config(void *db, int op, ...);

// SQLITE_DBCONFIG_ENABLE_QPSG in sqlite3.h.
enum { mauth_sqlite_dbconfig_enable_qpsg = 1007 };

int mauth_sqlite_enable_qpsg(void *db) {
    int enabled = 0;
    int status = sqlite_nio_sqlite3_db_config(db, mauth_sqlite_dbconfig_enable_qpsg, 1, &enabled);
    if (status != 0) return status;
    return enabled == 1 ? 0 : 1;
}
