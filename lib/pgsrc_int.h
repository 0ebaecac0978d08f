/* pgsrc_int.h - what the PostgreSQL source's files share inside lib/: the connection and its error message */
#ifndef REVCHECK_PGSRC_INT_H
#define REVCHECK_PGSRC_INT_H

#include <stddef.h>

#include <libpq-fe.h>

#include "pgsrc.h"

/* One connection (pgsrc.h's opaque struct pgsrc). */
struct pgsrc {
	PGconn		*conn;
	int		 can;		/* PGSRC_CAN_* prepared */
	int		 ncols;		/* columns of the prepared statements */
	struct pgsrc_quarantine q;
};

/*
 * Formats "postgresql: what: <server message>" into err, on one line
 * without a trailing newline: res's message, else the connection's (p
 * may be NULL), else "unknown error". This function can't fail.
 */
void pgsrc_err(const struct pgsrc *p, const PGresult *res, const char *what,
    char *err, size_t errlen);

#endif
