/* config_trust.c - the config's token issuers and introspection clients: read, checked, compared */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "config_json.h"
#include "config_opt.h"
#include "config_trust.h"
#include "jwt.h"
#include "util.h"

static void
free_issuers(struct config *c)
{
	struct config_issuer *is;
	size_t i, j;

	for (i = 0; i < c->nissuers; i++) {
		is = &c->issuers[i];
		free(is->issuer);
		free(is->jwks_file);
		free(is->jwks_uri);
		free(is->hs_secret_file);
		free(is->jwks_ca_file);
		for (j = 0; j < is->naud; j++)
			free(is->audiences[j]);
		memset(is, 0, sizeof(*is));
	}
	c->nissuers = 0;
}

static void
free_clients(struct config *c)
{
	size_t i, j;

	for (i = 0; i < c->nclients; i++) {
		free(c->clients[i].id);
		free(c->clients[i].secret_file);
		for (j = 0; j < c->clients[i].naud; j++)
			free(c->clients[i].audiences[j]);
		memset(&c->clients[i], 0, sizeof(c->clients[i]));
	}
	c->nclients = 0;
}

/* A duration member: seconds as a number, or a string "30s", "5m". */
static int
dur_member(int64_t *dst, const cJSON *v, const char *what, char *err,
    size_t errlen)
{
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble <= 31536000.0 &&
	    v->valuedouble == (double)(int64_t)v->valuedouble) {
		*dst = (int64_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v) && (strcmp(v->valuestring, "0") == 0 ||
	    util_parse_duration(v->valuestring, dst) == 0) &&
	    *dst <= 31536000) {
		if (strcmp(v->valuestring, "0") == 0)
			*dst = 0;
		return 0;
	}
	snprintf(err, errlen, "%s: bad duration (seconds or N[smhd], at "
	    "most a year)", what);
	return -1;
}

/* One member of an "issuers" element. what names it in errors. */
static int
issuer_member(struct config_issuer *is, const cJSON *m, const char *what,
    char *err, size_t errlen)
{
	const char *k = m->string;
	const cJSON *it;
	enum jwa a;

	if (strcmp(k, "issuer") == 0)
		return config_json_dup_str(&is->issuer, m, what, err, errlen);
	if (strcmp(k, "jwks_file") == 0)
		return config_json_dup_str(&is->jwks_file, m, what, err, errlen);
	if (strcmp(k, "jwks_uri") == 0)
		return config_json_dup_str(&is->jwks_uri, m, what, err, errlen);
	if (strcmp(k, "hs_secret_file") == 0)
		return config_json_dup_str(&is->hs_secret_file, m, what, err, errlen);
	if (strcmp(k, "leeway") == 0) {
		if (dur_member(&is->leeway, m, what, err, errlen) == -1)
			return -1;
		/*
		 * A token is accepted until exp plus the leeway, and a
		 * source's expired revocation is dropped --expiry-grace
		 * (10m by default) after exp: a longer leeway would accept a
		 * revoked token after its revocation is gone.
		 */
		if (is->leeway > CONFIG_LEEWAY_MAX) {
			snprintf(err, errlen, "%s: leeway is at most 5m (a "
			    "revoked token's revocation is dropped filterbuild "
			    "--expiry-grace, 10m by default, after its exp)",
			    what);
			return -1;
		}
		return 0;
	}
	if (strcmp(k, "jwks_refresh") == 0)
		return dur_member(&is->jwks_refresh, m, what, err, errlen);
	if (strcmp(k, "jwks_max_age") == 0)
		return dur_member(&is->jwks_max_age, m, what, err, errlen);
	if (strcmp(k, "jwks_min_interval") == 0)
		return dur_member(&is->jwks_min_interval, m, what, err, errlen);
	if (strcmp(k, "jwks_ca_file") == 0)
		return config_json_dup_str(&is->jwks_ca_file, m, what, err, errlen);
	if (strcmp(k, "audiences") == 0) {
		if (!cJSON_IsArray(m)) {
			snprintf(err, errlen, "%s: must be an array of "
			    "strings", what);
			return -1;
		}
		cJSON_ArrayForEach(it, m) {
			if (is->naud == JWT_MAX_AUD) {
				snprintf(err, errlen, "%s: more than %d", what,
				    JWT_MAX_AUD);
				return -1;
			}
			if (config_json_dup_str(&is->audiences[is->naud], it, what, err,
			    errlen) == -1)
				return -1;
			is->naud++;
		}
		return 0;
	}
	if (strcmp(k, "algorithms") == 0) {
		if (!cJSON_IsArray(m)) {
			snprintf(err, errlen, "%s: must be an array of "
			    "algorithm names", what);
			return -1;
		}
		cJSON_ArrayForEach(it, m) {
			if (!cJSON_IsString(it) ||
			    (a = jwa_from_name(it->valuestring)) ==
			    JWA_INVALID) {
				snprintf(err, errlen, "%s: \"%.16s\" is not one "
				    "of RS256/384/512, PS256/384/512, "
				    "ES256/384/512, EdDSA, HS256/384/512 (never "
				    "none)", what, cJSON_IsString(it) ?
				    it->valuestring : "?");
				return -1;
			}
			is->algs |= JWA_BIT(a);
		}
		return 0;
	}
	snprintf(err, errlen, "%s: unknown key", what);
	return -1;
}

int
config_trust_load_issuers(struct config *c, const cJSON *v,
    const char *origin, char *err, size_t errlen)
{
	struct config_issuer *is;
	const cJSON *el, *m;
	char what[160], e[300];

	if (!cJSON_IsArray(v)) {
		snprintf(err, errlen, "%s: key \"issuers\": must be an array "
		    "of objects", origin);
		return -1;
	}
	free_issuers(c);
	cJSON_ArrayForEach(el, v) {
		if (c->nissuers == CONFIG_MAX_ISSUERS) {
			snprintf(err, errlen, "%s: key \"issuers\": more than "
			    "%d", origin, CONFIG_MAX_ISSUERS);
			return -1;
		}
		is = &c->issuers[c->nissuers++];
		is->leeway = 30;
		is->jwks_refresh = 300;
		is->jwks_max_age = 86400;
		is->jwks_min_interval = 30;
		if (!cJSON_IsObject(el)) {
			snprintf(err, errlen, "%s: key \"issuers\": element %zu "
			    "is not an object", origin, c->nissuers);
			return -1;
		}
		for (m = el->child; m != NULL; m = m->next) {
			if (m->string == NULL || m->string[0] == '_')
				continue;
			snprintf(what, sizeof(what), "issuers[%zu].%.64s",
			    c->nissuers - 1, m->string);
			if (issuer_member(is, m, what, e, sizeof(e)) == -1) {
				snprintf(err, errlen, "%s: key %s", origin, e);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * A client's "audiences": 1 to JWT_MAX_AUD non-empty strings. An empty
 * list would make every answer inactive, which is a mistake, not a
 * setting.
 */
static int
client_audiences(struct config_client *cl, const cJSON *m, const char *what,
    char *err, size_t errlen)
{
	const cJSON *it;

	if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) == 0) {
		snprintf(err, errlen, "%s: must be a non-empty array of "
		    "strings", what);
		return -1;
	}
	if (cl->naud > 0) {
		snprintf(err, errlen, "%s: given twice", what);
		return -1;
	}
	cJSON_ArrayForEach(it, m) {
		if (cl->naud == JWT_MAX_AUD) {
			snprintf(err, errlen, "%s: more than %d", what,
			    JWT_MAX_AUD);
			return -1;
		}
		if (config_json_dup_str(&cl->audiences[cl->naud], it, what, err,
		    errlen) == -1)
			return -1;
		cl->naud++;
	}
	return 0;
}

int
config_trust_load_clients(struct config *c, const cJSON *v,
    const char *origin, char *err, size_t errlen)
{
	struct config_client *cl;
	const cJSON *el, *m;
	char what[160], e[300];

	if (!cJSON_IsArray(v)) {
		snprintf(err, errlen, "%s: key \"introspection_clients\": "
		    "must be an array of objects", origin);
		return -1;
	}
	free_clients(c);
	cJSON_ArrayForEach(el, v) {
		if (c->nclients == CONFIG_MAX_CLIENTS || !cJSON_IsObject(el)) {
			snprintf(err, errlen, "%s: key "
			    "\"introspection_clients\": at most %d objects",
			    origin, CONFIG_MAX_CLIENTS);
			return -1;
		}
		cl = &c->clients[c->nclients++];
		for (m = el->child; m != NULL; m = m->next) {
			if (m->string == NULL || m->string[0] == '_')
				continue;
			snprintf(what, sizeof(what),
			    "introspection_clients[%zu].%.64s", c->nclients - 1,
			    m->string);
			if (strcmp(m->string, "id") == 0 ? config_json_dup_str(&cl->id, m,
			    what, e, sizeof(e)) :
			    strcmp(m->string, "secret_file") == 0 ?
			    config_json_dup_str(&cl->secret_file, m, what, e, sizeof(e)) :
			    strcmp(m->string, "audiences") == 0 ?
			    client_audiences(cl, m, what, e, sizeof(e)) :
			    (snprintf(e, sizeof(e), "%s: unknown key", what),
			    -1)) {
				snprintf(err, errlen, "%s: key %s", origin, e);
				return -1;
			}
		}
	}
	return 0;
}

/* The issuers and introspection clients hang together. */
int
config_trust_validate(const struct config *c, char *err, size_t errlen)
{
	const struct config_issuer *is;
	size_t i, j;

	if (c->revocation_only && c->nissuers > 0) {
		snprintf(err, errlen, "token_verification: \"revocation-only\" "
		    "verifies no token, so \"issuers\" would be ignored; "
		    "remove one of them");
		return -1;
	}
	for (i = 0; i < c->nissuers; i++) {
		is = &c->issuers[i];
		if (is->issuer == NULL) {
			snprintf(err, errlen, "issuers[%zu]: \"issuer\" is "
			    "required", i);
			return -1;
		}
		/* The issuer is the revocation scope of its tokens. */
		if (!revkey_scope_valid(is->issuer, strlen(is->issuer)) ||
		    revkey_scope_is_x509(is->issuer)) {
			snprintf(err, errlen, "issuers[%zu].issuer: not a valid "
			    "token scope (printable ASCII without spaces, at "
			    "most %d bytes)", i, REVKEY_SCOPE_MAX);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (strcmp(c->issuers[j].issuer, is->issuer) == 0) {
				snprintf(err, errlen, "issuers[%zu].issuer: "
				    "repeats issuers[%zu]", i, j);
				return -1;
			}
		if ((is->jwks_file != NULL) == (is->jwks_uri != NULL)) {
			snprintf(err, errlen, "issuers[%zu]: exactly one of "
			    "\"jwks_file\" and \"jwks_uri\" is required", i);
			return -1;
		}
		if (is->jwks_uri != NULL &&
		    strncmp(is->jwks_uri, "https://", 8) != 0) {
			snprintf(err, errlen, "issuers[%zu].jwks_uri: must be an "
			    "https:// URL", i);
			return -1;
		}
		if (is->naud == 0) {
			snprintf(err, errlen, "issuers[%zu]: \"audiences\" must "
			    "name at least one accepted audience", i);
			return -1;
		}
		if (is->algs == 0) {
			snprintf(err, errlen, "issuers[%zu]: \"algorithms\" must "
			    "name at least one algorithm", i);
			return -1;
		}
		if ((is->algs & JWA_HS_MASK) != 0 && is->hs_secret_file == NULL) {
			snprintf(err, errlen, "issuers[%zu]: HS algorithms need "
			    "\"hs_secret_file\"", i);
			return -1;
		}
		if ((is->algs & JWA_HS_MASK) == 0 && is->hs_secret_file != NULL) {
			snprintf(err, errlen, "issuers[%zu].hs_secret_file: no "
			    "HS algorithm is allowed", i);
			return -1;
		}
		if (is->jwks_min_interval < 1 ||
		    is->jwks_refresh < is->jwks_min_interval ||
		    is->jwks_max_age < is->jwks_refresh) {
			snprintf(err, errlen, "issuers[%zu]: need 1s <= "
			    "jwks_min_interval <= jwks_refresh <= jwks_max_age",
			    i);
			return -1;
		}
		if (is->jwks_ca_file != NULL && is->jwks_uri == NULL) {
			snprintf(err, errlen, "issuers[%zu].jwks_ca_file: only "
			    "with jwks_uri", i);
			return -1;
		}
	}
	for (i = 0; i < c->nclients; i++) {
		if (c->clients[i].id == NULL ||
		    c->clients[i].secret_file == NULL) {
			snprintf(err, errlen, "introspection_clients[%zu]: "
			    "\"id\" and \"secret_file\" are required", i);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (strcmp(c->clients[j].id, c->clients[i].id) == 0) {
				snprintf(err, errlen, "introspection_clients"
				    "[%zu].id: repeats element %zu", i, j);
				return -1;
			}
	}
	return 0;
}

/* True when the issuers of a and b differ. */
bool
config_trust_issuers_differ(const struct config *a,
    const struct config *b)
{
	const struct config_issuer *x, *y;
	size_t i, j;

	if (a->nissuers != b->nissuers)
		return true;
	for (i = 0; i < a->nissuers; i++) {
		x = &a->issuers[i];
		y = &b->issuers[i];
		if (config_str_differs(x->issuer, y->issuer) ||
		    config_str_differs(x->jwks_file, y->jwks_file) ||
		    config_str_differs(x->jwks_uri, y->jwks_uri) ||
		    config_str_differs(x->hs_secret_file, y->hs_secret_file) ||
		    config_str_differs(x->jwks_ca_file, y->jwks_ca_file) ||
		    x->jwks_min_interval != y->jwks_min_interval ||
		    x->naud != y->naud || x->algs != y->algs ||
		    x->leeway != y->leeway ||
		    x->jwks_refresh != y->jwks_refresh ||
		    x->jwks_max_age != y->jwks_max_age)
			return true;
		for (j = 0; j < x->naud; j++)
			if (strcmp(x->audiences[j], y->audiences[j]) != 0)
				return true;
	}
	return false;
}

/* True when the introspection clients of a and b differ. */
bool
config_trust_clients_differ(const struct config *a,
    const struct config *b)
{
	size_t i, j;

	if (a->nclients != b->nclients)
		return true;
	for (i = 0; i < a->nclients; i++) {
		if (config_str_differs(a->clients[i].id, b->clients[i].id) ||
		    config_str_differs(a->clients[i].secret_file,
		    b->clients[i].secret_file) ||
		    a->clients[i].naud != b->clients[i].naud)
			return true;
		for (j = 0; j < a->clients[i].naud; j++)
			if (strcmp(a->clients[i].audiences[j],
			    b->clients[i].audiences[j]) != 0)
				return true;
	}
	return false;
}

void
config_trust_free(struct config *c)
{
	free_issuers(c);
	free_clients(c);
}
