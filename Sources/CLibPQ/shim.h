#include <libpq-fe.h>
// The result-field selector for the SQLSTATE is a macro over a character constant in postgres_ext.h.
static inline int silo_pg_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int silo_pg_diag_message_detail(void) { return PG_DIAG_MESSAGE_DETAIL; }
