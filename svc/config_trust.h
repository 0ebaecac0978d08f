/* config_trust.h - the config's token issuers and introspection clients: read, checked, compared */
#ifndef REVCHECK_SVC_CONFIG_TRUST_H
#define REVCHECK_SVC_CONFIG_TRUST_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"

/*
 * Replaces c's issuers with the file's "issuers" array v (origin names
 * the file in errors). Returns 0, or -1 with err naming the issuer and
 * the member; c then holds the issuers read so far (config_free frees
 * them).
 */
int config_trust_load_issuers(struct config *c, const cJSON *v,
    const char *origin, char *err, size_t errlen);

/* The same for "introspection_clients". */
int config_trust_load_clients(struct config *c, const cJSON *v,
    const char *origin, char *err, size_t errlen);

/*
 * Checks that the issuers and clients hang together (config_validate's
 * share). Does not touch the filesystem. Returns 0, or -1 with err.
 */
int config_trust_validate(const struct config *c, char *err, size_t errlen);

/* True when a and b differ in any issuer setting (SIGHUP). */
bool config_trust_issuers_differ(const struct config *a,
    const struct config *b);

/* True when a and b differ in any introspection client. */
bool config_trust_clients_differ(const struct config *a,
    const struct config *b);

/* Frees c's issuers and clients and zeroes them. Safe on a zeroed c. */
void config_trust_free(struct config *c);

#endif
