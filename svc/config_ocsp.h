/* config_ocsp.h - the config's "ocsp" section: read, checked, compared, copied */
#ifndef REVCHECK_SVC_CONFIG_OCSP_H
#define REVCHECK_SVC_CONFIG_OCSP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"

/*
 * Replaces c's OCSP settings with the file's "ocsp" object v (origin
 * names the file in errors): "path", "responders" (an array of
 * {"issuer", "cert", "key"} file names) and "cache_max" (bytes). Returns
 * 0, or -1 with err naming the member; c then holds what was read so far
 * (config_free frees it).
 */
int config_ocsp_load(struct config *c, const cJSON *v, const char *origin,
    char *err, size_t errlen);

/*
 * Checks that the section hangs together (config_validate's share):
 * every responder has its three files, the path is "/" or "/NAME..."
 * without a query and does not shadow another endpoint. Does not touch
 * the filesystem. Returns 0, or -1 with err.
 */
int config_ocsp_validate(const struct config *c, char *err, size_t errlen);

/* The path in force: c's, or CONFIG_OCSP_PATH. Can't fail. */
const char *config_ocsp_path(const struct config *c);

/* True when a and b differ in any OCSP setting (SIGHUP). */
bool config_ocsp_differ(const struct config *a, const struct config *b);

/*
 * Deep-copies src's section into dst's (dst's pointers are overwritten,
 * not freed). false when memory runs out (dst's section then holds what
 * was copied: config_free frees it).
 */
bool config_ocsp_copy(struct config *dst, const struct config *src);

/* Frees c's section and zeroes it. Safe on a zeroed c. */
void config_ocsp_free(struct config *c);

#endif
