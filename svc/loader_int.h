/* loader_int.h - what loader.c and loader_chain.c share, private to them */
#ifndef REVCHECK_LOADER_INT_H
#define REVCHECK_LOADER_INT_H

#include <stddef.h>
#include <sys/stat.h>

#include "loader.h"

/* s into out (cap bytes): 0, or -1 when it was cut. */
int loader_copy_str(char *out, size_t cap, const char *s);

/*
 * The rollback state (n entries of hwm) written durably: 0, or -1 with
 * err filled.
 */
int loader_state_write(struct loader *l, const struct loader_hwm *hwm,
    size_t n, char *err, size_t errlen);

/*
 * A file the daemon trusts, checked against l's filter_owner (file_ok in
 * loader.c): 0, or -1 with err filled.
 */
int loader_owner_ok(const struct loader *l, const char *path,
    const struct stat *st, char *err, size_t errlen);

#endif
