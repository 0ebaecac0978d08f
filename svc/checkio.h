/* checkio.h - the check path's wire formats: request bodies and certificates to keys, results to JSON */
#ifndef REVCHECK_SVC_CHECKIO_H
#define REVCHECK_SVC_CHECKIO_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "jwt.h"
#include "revkey.h"
#include "sbuf.h"
#include "snapshot.h"
#include "trust.h"

/*
 * What a check request says, read into keys, and what the decision
 * (check.h) answers, written as JSON: the parsers and renderers of
 * /v1/check, /v1/authz and the fuzzers, beside the handlers. Nothing here
 * decides an answer. Every parser takes hostile input and refuses with a
 * message that never contains it.
 */

/*
 * Caps on a certificate chain (POST /v1/check {"cert", "chain"} and the
 * authz client-certificate header): certificates in all, the leaf
 * included, and bytes of their text added up.
 */
#define CHECKIO_CHAIN_MAX_CERTS	8
#define CHECKIO_CHAIN_MAX_BYTES	(64 * 1024)

/*
 * Parses a POST /v1/check body: valid UTF-8, exactly one JSON value with
 * nothing but whitespace after it, and that value an object. Returns the
 * root, which the caller deletes, or NULL with *why set to a static
 * message (safe to show: it never contains the input).
 */
cJSON *checkio_parse_body(const char *body, size_t len, const char **why);

/*
 * Derives the key of one check object: {"id", "scope"?}, {"cert"} or
 * {"token"}; exactly one of id, cert and token. A token is proven valid
 * first (trust_token with tr; NULL refuses it). Returns 0, or -1 with err
 * (safe to show: it never contains the input) and *why: JWT_VALID for a
 * bad request, JWT_MALFORMED for an unreadable token, any other verdict
 * for a token that failed verification (401 invalid_token).
 */
int checkio_key_from_json(const cJSON *obj, struct trust *tr,
    struct revkey *k, enum jwt_verdict *why, char *err, size_t errlen);

/*
 * The key of {"id": id, "scope": scope} (scope NULL: no "scope", the
 * default), from bytes that need not be NUL-terminated (a batch item
 * read in place): the rule and the message checkio_key_from_json gives for
 * that object. Returns 0, or -1 with err (safe to show).
 */
int checkio_key_from_id(struct revkey *k, const char *scope, size_t scope_len,
    const char *id, size_t id_len, char *err, size_t errlen);

/*
 * checkio_key_from_id for an item whose scope is that of prev, a key
 * checkio_key_from_id derived for a scope that is not x509: (scope
 * NULL: the default) the same bytes, so valid, and an id of 1 to
 * REVKEY_ID_MAX bytes. Then k is what checkio_key_from_id would give,
 * without validating the scope again (a batch of ids of one scope), and
 * 0 is returned; otherwise -1 and k is untouched: derive it the full way,
 * which also words the refusal. k and prev must not be the same key.
 */
int checkio_key_same_scope(struct revkey *k, const struct revkey *prev,
    const char *scope, size_t scope_len, const char *id, size_t id_len);

/*
 * The same, also filling cut for a {"token"} object (cut->has_sub and
 * has_sid stay false for the other kinds). cut may be NULL.
 */
int checkio_key_from_json_cut(const cJSON *obj, struct trust *tr,
    struct revkey *k, struct trust_cutoffs *cut, enum jwt_verdict *why,
    char *err, size_t errlen);

/* True when why (from checkio_key_from_json) means 401 invalid_token. */
bool checkio_invalid_token(enum jwt_verdict why);

/*
 * Derives the key of every certificate in text and appends them to
 * keys[*n..max). text is one or more PEM "CERTIFICATE" blocks with only
 * whitespace around and between them, or (without PEM armour) exactly one
 * DER certificate. Every block must be a certificate: a block that does
 * not parse, any other text, no certificate at all or more than max keys
 * in all returns -1 with err saying which (1-based position in text) and
 * why (safe to show: it never contains the input); *n is then undefined.
 * Returns 0 with *n advanced.
 */
int checkio_keys_from_pem(const char *text, size_t len, struct revkey *keys,
    size_t max, size_t *n, char *err, size_t errlen);

/*
 * Derives the keys of {"cert": PEM, "chain": [PEM, ...]} ("chain"
 * optional): the certificates of "cert" first, then those of each chain
 * element in order, at most CHECKIO_CHAIN_MAX_CERTS and CHECKIO_CHAIN_MAX_BYTES
 * of text. "id", "token" and "scope" may not be present. Returns 0 with
 * keys[0..*n) set, or -1 with err (safe to show).
 */
int checkio_chain_from_json(const cJSON *obj, struct revkey *keys, size_t *n,
    char *err, size_t errlen);

/*
 * Appends the answer of a chain: the fields of the worst result (as
 * checkio_render), "decided_by" (its index) and "chain", one answer object
 * per certificate in order; ok[i] false renders certificate i as an
 * error object (server_render_error) named by r[i].fail (check_fail_str).
 * worst must be an index with ok[worst].
 */
void checkio_render_chain(struct sbuf *b, const struct snapshot *s,
    const struct revkey *keys, const struct check_result *r, const bool *ok,
    size_t n, size_t worst);

/* Appends the answer object for one key (see docs/API.md). */
void checkio_render(struct sbuf *b, const struct snapshot *s,
    const struct revkey *k, const struct check_result *r);

#endif
