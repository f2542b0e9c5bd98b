#ifndef MAUTH_CSQLITESETTINGS_H
#define MAUTH_CSQLITESETTINGS_H

/// Turns on SQLite's query planner stability guarantee (`SQLITE_DBCONFIG_ENABLE_QPSG`) for the connection `db`, an
/// `sqlite3 *` of sqlite-nio's vendored SQLite. Returns 0 when it is on, else SQLite's result code (or 1 when SQLite
/// did not report it on).
///
/// In C because `sqlite3_db_config` is variadic, which Swift cannot call.
int mauth_sqlite_enable_qpsg(void *db);

#endif
