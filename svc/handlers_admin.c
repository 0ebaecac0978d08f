/* handlers_admin.c - /v1/status, /metrics, /healthz, /readyz, /v1/filter and /v1/delta */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "longpoll.h"
#include "crl.h"
#include "procstat.h"
#include "server.h"
#include "srcq.h"
#include "util.h"

#define FILTER_MAX_CACHE 60	/* seconds a cache may keep /v1/filter */
#define DELTA_BLOCK	(16u << 10)	/* bytes a /v1/delta reply copies a turn */
/* What a cache may do with bytes under a name that never changes. */
#define CACHE_IMMUTABLE	"public, max-age=31536000, immutable"
#define HDR_WAIT	"X-Revcheck-Wait"

static double
observed_fp(void)
{
	uint64_t fp = metrics_get(MET_FALSE_POSITIVE);
	uint64_t neg = metrics_get(MET_FILTER_NEGATIVE);

	return fp + neg == 0 ? 0.0 : (double)fp / (double)(fp + neg);
}

/* Adds a 32-byte hash as lowercase hex. */
static void
add_hex(cJSON *o, const char *name, const unsigned char *h)
{
	char hex[65];

	util_hex(hex, h, 32);
	cJSON_AddStringToObject(o, name, hex);
}

/* "coverage":[...]: the parts a partial CRL covers, [] when whole. */
static void
add_coverage(cJSON *o, const struct ffile_scope *sc)
{
	cJSON *arr, *p, *rs;
	unsigned i;
	int bit;

	arr = cJSON_AddArrayToObject(o, "coverage");
	for (i = 0; i < sc->npart; i++) {
		if ((p = json_add(arr, NULL, cJSON_CreateObject())) == NULL)
			return;
		cJSON_AddStringToObject(p, "kind",
		    crl_part_kind_name(sc->part[i].kind));
		rs = cJSON_AddArrayToObject(p, "reasons");
		for (bit = 1; bit <= 8; bit++)
			if ((sc->part[i].reasons & (1u << bit)) != 0)
				json_add(rs, NULL, cJSON_CreateString(
				    crl_reason_flag_name(bit)));
		add_hex(p, "distribution_point", sc->part[i].dp);
		cJSON_AddBoolToObject(p, "indirect",
		    (sc->part[i].flags & FFILE_PART_INDIRECT) != 0);
		cJSON_AddBoolToObject(p, "delegated",
		    (sc->part[i].flags & FFILE_PART_DELEGATED) != 0);
		add_hex(p, "crl_issuer_scope_hash", sc->part[i].crl_issuer);
		json_add_str(p, "crl_number", sc->part[i].crl_number);
	}
}

static void
add_scope(cJSON *arr, const struct ffile_scope *sc)
{
	cJSON *o;

	if ((o = json_add(arr, NULL, cJSON_CreateObject())) == NULL)
		return;
	json_add_str(o, "scope", sc->name);
	json_add_u64(o, "keys", sc->keys);
	if (sc->exact) {
		cJSON *e = cJSON_AddObjectToObject(o, "exact");

		json_add_time(e, "cutoff", sc->ex.cutoff);
		json_add_u64(e, "issued", sc->ex.issued);
	}
	if (sc->source != FFILE_SRC_CRL) {
		cJSON_AddStringToObject(o, "source", "list");
		return;
	}
	cJSON_AddStringToObject(o, "source", "crl");
	json_add_strn(o, "issuer", sc->issuer, sizeof(sc->issuer));
	json_add_strn(o, "crl_number", sc->crl_number, sizeof(sc->crl_number));
	json_add_time(o, "this_update", sc->this_update);
	json_add_time(o, "next_update", sc->next_update);
	add_hex(o, "crl_sha256", sc->crl_sha256);
	cJSON_AddBoolToObject(o, "crl_verified",
	    (sc->flags & FFILE_SCOPE_UNVERIFIED) == 0);
	cJSON_AddBoolToObject(o, "next_update_assumed",
	    (sc->flags & FFILE_SCOPE_ASSUMED_NEXT) != 0);
	add_coverage(o, sc);
	if ((sc->flags & FFILE_SCOPE_KEPT) != 0)
		cJSON_AddTrueToObject(o, "kept_from_previous");
	if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0)
		cJSON_AddTrueToObject(o, "attributed");
}

/*
 * The chain in service: the delta sequence over the base, the overlay's
 * size, the last delta's age and the revocation lag (from the newest
 * change it carried to its application here; null when unknown).
 */
static void
add_delta(cJSON *f, const struct snapshot *s, int64_t now)
{
	cJSON *o = cJSON_AddObjectToObject(f, "delta");

	json_add_u64(o, "seq", s->pos.seq);
	json_add_u64(o, "overlay_keys", s->ov != NULL ? overlay_count(s->ov) :
	    0);
	json_add_u64(o, "overlay_bytes", s->ov != NULL ? overlay_bytes(s->ov) :
	    0);
	json_add_time(o, "last_delta_at", s->last_delta_at);
	if (s->last_delta_at != 0)
		json_add_i64(o, "last_delta_age_seconds",
		    now - s->last_delta_at);
	else
		cJSON_AddNullToObject(o, "last_delta_age_seconds");
	if (s->last_change_at != 0 && s->applied_at != 0)
		json_add_i64(o, "revocation_lag_seconds",
		    s->applied_at - s->last_change_at);
	else
		cJSON_AddNullToObject(o, "revocation_lag_seconds");
}

/*
 * "config":{...}: the generation of the settings in force, when it was
 * applied, and the restart-only keys the last SIGHUP found changed (still
 * at their running values until a restart), or null.
 */
static void
add_config(cJSON *root, const struct server_req *r)
{
	const struct live *lv = r->live;
	struct live_reload lr;
	cJSON *o = cJSON_AddObjectToObject(root, "config"), *l;

	json_add_u64(o, "generation", lv->gen);
	json_add_time(o, "applied_at", lv->applied_at);
	json_add_opt(o, "file", lv->cfg.config_file);
	json_add_opt(o, "restart_pending", lv->pending);
	/*
	 * A refused SIGHUP leaves the generation as it was: say so here,
	 * or the operator who sent it sees nothing wrong.
	 */
	live_last_reload(r->ctx->live, &lr);
	if (lr.time == 0) {
		json_add(o, "last_reload", cJSON_CreateNull());
		return;
	}
	l = cJSON_AddObjectToObject(o, "last_reload");
	json_add_time(l, "time", lr.time);
	json_add_str(l, "result", lr.applied ? "applied" : "refused");
	json_add_opt(l, "error", lr.applied ? NULL : lr.error);
}

static void
add_filter(cJSON *root, const struct server_req *r,
    const struct snapshot *s, int64_t now)
{
	const struct ffile_info *fi = s->info;
	enum stale_reason sr;
	cJSON *o, *arr;
	uint32_t i;

	sr = snapshot_stale(s, &r->live->policy, now, r->ctx->slot);
	o = cJSON_AddObjectToObject(root, "filter");
	json_add_u64(o, "version", fi->version);
	json_add_time(o, "issued_at", fi->issued_at);
	json_add_time(o, "expires_at", fi->expires_at);
	json_add_i64(o, "age_seconds", now - fi->issued_at);
	json_add_i64(o, "expires_in_seconds", fi->expires_at - now);
	cJSON_AddBoolToObject(o, "stale", sr != STALE_FRESH);
	json_add_opt(o, "stale_reason", sr != STALE_FRESH ?
	    stale_reason_str(sr) : NULL);
	json_add_time(o, "loaded_at", s->loaded_at);
	json_add_u64(o, "keys", fi->keys);
	json_add_u64(o, "bits", fi->m);
	json_add_u64(o, "hashes", fi->k);
	cJSON_AddStringToObject(o, "layout", bloom_layout_name(fi->layout));
	json_add_double(o, "fp_rate_target", fi->fp_rate_target);
	json_add_double(o, "fill_ratio", s->fill_ratio);
	json_add_double(o, "estimated_fp_rate", s->estimated_fp);
	cJSON_AddStringToObject(o, "signer", s->signer_hex);
	cJSON_AddStringToObject(o, "sha256", s->sha_hex);
	add_hex(o, "table_sha256", fi->table_sha256);
	add_delta(o, s, now);
	cJSON_AddStringToObject(o, "authority", s->tab != NULL ? "table" :
	    "upstream");
	arr = cJSON_AddArrayToObject(o, "scopes");
	for (i = 0; i < fi->nscopes; i++)
		add_scope(arr, &fi->scopes[i]);
}

static enum MHD_Result
reply_sbuf(const struct server_req *r, unsigned status, struct sbuf *b,
    const char *ctype)
{
	char *body;
	size_t len;

	if ((body = sbuf_take(b, &len)) == NULL)
		return MHD_NO;
	return server_reply(r, status, body, len, ctype, NULL, 0);
}

enum MHD_Result
handle_status(const struct server_req *r)
{
	struct server_ctx *ctx = r->ctx;
	struct loader_event ev;
	struct snapshot *s;
	uint64_t acc = 0, rej = 0;
	int64_t now = util_now();
	cJSON *root, *o;
	struct sbuf b;
	int m;

	if ((root = cJSON_CreateObject()) == NULL)
		return MHD_NO;
	o = cJSON_AddObjectToObject(root, "service");
	cJSON_AddStringToObject(o, "version", REVCHECK_VERSION);
	cJSON_AddStringToObject(o, "mode", ctx->cfg->filter_dir != NULL ?
	    "origin" : "edge");
	json_add_time(o, "started_at", ctx->started_at);
	json_add_i64(o, "uptime_seconds", now - ctx->started_at);
	/* The clock this node judges staleness by (filterbuild audit
	 * compares it with its own). */
	json_add_time(o, "now", now);
	json_add_i64(o, "now_unix", now);
	if ((s = snapshot_acquire(ctx->slot)) != NULL) {
		add_filter(root, r, s, now);
		snapshot_release(s);
	} else
		cJSON_AddNullToObject(root, "filter");
	o = cJSON_AddObjectToObject(root, "counters");
	for (m = 0; m < MET_RELOAD_ACCEPTED; m++)
		json_add_u64(o, metrics_name((enum metric)m),
		    metrics_get((enum metric)m));
	json_add_double(o, "observed_fp_rate", observed_fp());
	/* Answers of exact scopes, by path (revcheckd_exact_answers_total). */
	o = cJSON_AddObjectToObject(o, "exact");
	json_add_u64(o, "not_revoked", metrics_get(MET_EXACT_NOT_REVOKED));
	json_add_u64(o, "revoked", metrics_get(MET_EXACT_REVOKED));
	json_add_u64(o, "unproven", metrics_get(MET_EXACT_UNPROVEN));
	o = cJSON_AddObjectToObject(root, "reloads");
	if (ctx->loader != NULL)
		loader_stats(ctx->loader, &ev, &acc, &rej);
	json_add(o, "last", ctx->loader != NULL ? loader_event_json(&ev) :
	    cJSON_CreateNull());
	json_add_u64(o, "accepted", acc);
	json_add_u64(o, "refused", rej);
	json_add_u64(o, "highest_version", ctx->loader != NULL ?
	    loader_highest(ctx->loader) : 0);
	/* The pair in service is not on disk (served from memory). */
	json_add(root, "disk_mismatch", ctx->loader != NULL ?
	    loader_disk_json(ctx->loader) : cJSON_CreateNull());
	add_config(root, r);
	trust_status_json(root, &r->live->trust);
	srcq_status_json(root, ctx->cfg->filter_dir);
	if (ctx->status_extra != NULL)
		ctx->status_extra(root, ctx->status_extra_arg);
	sbuf_init(&b, 4096, 0);
	sbuf_add_json(&b, root);
	sbuf_adds(&b, "\n");
	cJSON_Delete(root);
	return reply_sbuf(r, MHD_HTTP_OK, &b, CTYPE_JSON);
}

static void
gauge(struct sbuf *b, const char *name, const char *help, double v)
{
	sbuf_addf(b, "# HELP revcheckd_%s %s\n# TYPE revcheckd_%s gauge\n"
	    "revcheckd_%s ", name, help, name, name);
	sbuf_addf(b, "%.9g\n", v);
}

/* A gauge that must keep every digit (a Unix time). */
static void
gauge_i64(struct sbuf *b, const char *name, const char *help, int64_t v)
{
	sbuf_addf(b, "# HELP revcheckd_%s %s\n# TYPE revcheckd_%s gauge\n"
	    "revcheckd_%s ", name, help, name, name);
	sbuf_add_i64(b, v);
	sbuf_adds(b, "\n");
}

static void
counter(struct sbuf *b, const char *name, const char *help, uint64_t v)
{
	sbuf_addf(b, "# HELP revcheckd_%s_total %s\n"
	    "# TYPE revcheckd_%s_total counter\nrevcheckd_%s_total ",
	    name, help, name, name);
	sbuf_add_u64(b, v);
	sbuf_adds(b, "\n");
}

/*
 * Per CRL scope: its thisUpdate and nextUpdate (0 when the CRL has none),
 * so that an alert can fire before a CRL runs out.
 */
static void
crl_times(struct sbuf *b, const struct ffile_info *fi)
{
	static const char *const names[2] = {
		"revcheckd_crl_this_update_timestamp_seconds",
		"revcheckd_crl_next_update_timestamp_seconds",
	};
	static const char *const helps[2] = {
		"thisUpdate of the CRL behind each scope of the filter.",
		"nextUpdate of the CRL behind each scope (0: none given).",
	};
	const struct ffile_scope *sc;
	uint32_t i;
	int w;

	for (w = 0; w < 2; w++) {
		sbuf_addf(b, "# HELP %s %s\n# TYPE %s gauge\n", names[w],
		    helps[w], names[w]);
		for (i = 0; fi != NULL && i < fi->nscopes; i++) {
			sc = &fi->scopes[i];
			if (sc->source != FFILE_SRC_CRL)
				continue;
			sbuf_addf(b, "%s{scope=", names[w]);
			sbuf_add_label(b, sc->name, strlen(sc->name));
			sbuf_adds(b, ",issuer=");
			sbuf_add_label(b, sc->issuer, sizeof(sc->issuer));
			sbuf_adds(b, "} ");
			sbuf_add_i64(b, w == 0 ? sc->this_update :
			    sc->next_update);
			sbuf_adds(b, "\n");
		}
	}
}

/*
 * The filter in service (s; NULL: none loaded): its version, age,
 * staleness (sr), size and fill, the deltas over it, its CRLs' times.
 */
static void
filter_gauges(struct sbuf *b, const struct snapshot *s, enum stale_reason sr,
    int64_t now)
{
	gauge(b, "filter_loaded", "1 when a verified filter is loaded.",
	    s != NULL);
	gauge(b, "filter_version", "Version of the loaded filter.",
	    s != NULL ? (double)s->version : 0);
	gauge(b, "filter_age_seconds", "Seconds since the filter was issued.",
	    s != NULL ? (double)(now - s->info->issued_at) : 0);
	gauge(b, "filter_expires_in_seconds", "Seconds until the filter "
	    "expires (negative once expired).",
	    s != NULL ? (double)(s->info->expires_at - now) : 0);
	gauge_i64(b, "filter_expires_timestamp_seconds", "When the loaded "
	    "filter expires (signed expires_at, Unix time; 0: none loaded).",
	    s != NULL ? s->info->expires_at : 0);
	gauge_i64(b, "filter_issued_timestamp_seconds", "When the loaded "
	    "filter was issued (Unix time; 0: none loaded).",
	    s != NULL ? s->info->issued_at : 0);
	gauge(b, "filter_stale", "1 when the loaded filter is stale (or none "
	    "is loaded).", s == NULL || sr != STALE_FRESH);
	gauge(b, "filter_keys", "Keys in the loaded filter.",
	    s != NULL ? (double)s->info->keys : 0);
	gauge(b, "filter_size_bytes", "Size of the loaded filter's bit or "
	    "fingerprint array in bytes (bits / 8, rounded up).",
	    s != NULL ? (double)((s->info->m + 7) / 8) : 0);
	gauge(b, "filter_fill_ratio", "Set bits / bits of the filter array.",
	    s != NULL ? s->fill_ratio : 0);
	gauge(b, "filter_estimated_fp_ratio", "FP rate implied by the fill "
	    "(classic, blocked) or by the fingerprint width (fuse: 2^-bits).",
	    s != NULL ? s->estimated_fp : 0);
	gauge(b, "filter_fp_target_ratio", "The false-positive rate the "
	    "filter was built for (filterbuild --fp-rate).",
	    s != NULL ? s->info->fp_rate_target : 0);
	gauge(b, "observed_fp_ratio", "False positives / (false positives + "
	    "filter negatives).", observed_fp());
	gauge(b, "delta_seq", "Deltas applied over the base in service.",
	    s != NULL ? (double)s->pos.seq : 0);
	gauge(b, "delta_overlay_keys", "Keys the delta overlay holds.",
	    s != NULL && s->ov != NULL ? (double)overlay_count(s->ov) : 0);
	gauge(b, "delta_overlay_bytes", "Memory of the delta overlay.",
	    s != NULL && s->ov != NULL ? (double)overlay_bytes(s->ov) : 0);
	gauge(b, "reload_spare_bytes", "Memory of the table copy a reload "
	    "released, kept reload_spare seconds for the next (0: none).",
	    (double)util_copy_spare());
	gauge(b, "delta_last_age_seconds", "Seconds since the last delta "
	    "in service was issued (0 when none).",
	    s != NULL && s->last_delta_at != 0 ?
	    (double)(now - s->last_delta_at) : 0);
	gauge(b, "delta_revocation_lag_seconds", "From the newest change "
	    "of the last delta (its commit time in the source) to its "
	    "enforcement here (0 when unknown).",
	    s != NULL && s->last_change_at != 0 && s->applied_at != 0 ?
	    (double)(s->applied_at - s->last_change_at) : 0);
	crl_times(b, s != NULL ? s->info : NULL);
}

/*
 * What the loader did and holds: filter loads by result, the delta chain
 * memory, whether the filter in service is still what the directory has.
 */
static void
loader_metrics(struct sbuf *b, struct server_ctx *ctx)
{
	uint64_t acc = 0, rej = 0;
	struct loader_disk dk;

	if (ctx->loader != NULL)
		loader_stats(ctx->loader, NULL, &acc, &rej);
	gauge(b, "delta_memory_bytes", "Verified delta chain files (and "
	    "their index) held in memory for /v1/delta, all readers "
	    "together (bounded by delta_memory_max).",
	    (double)chainbuf_live_bytes());
	gauge(b, "served_not_on_disk", "1 when the filter in service is not "
	    "what the filter dir has (its files gone or changed, or current "
	    "refused): served from memory, where it was verified.",
	    ctx->loader != NULL && loader_disk_state(ctx->loader, &dk));
	sbuf_adds(b, "# HELP revcheckd_reloads_total Filter loads by "
	    "result.\n# TYPE revcheckd_reloads_total counter\n");
	sbuf_addf(b, "revcheckd_reloads_total{result=\"accepted\"} %llu\n"
	    "revcheckd_reloads_total{result=\"refused\"} %llu\n",
	    (unsigned long long)acc, (unsigned long long)rej);
}

/* The settings in force (lv): token trust, SIGHUP reloads, generation. */
static void
config_metrics(struct sbuf *b, struct live *lv)
{
	trust_metrics(b, &lv->trust);
	sbuf_adds(b, "# HELP revcheckd_config_reloads_total SIGHUP reloads "
	    "of the configuration by result (refused: nothing changed).\n"
	    "# TYPE revcheckd_config_reloads_total counter\n");
	sbuf_addf(b, "revcheckd_config_reloads_total{result=\"applied\"} "
	    "%llu\nrevcheckd_config_reloads_total{result=\"refused\"} %llu\n",
	    (unsigned long long)metrics_get(MET_CONFIG_RELOAD_APPLIED),
	    (unsigned long long)metrics_get(MET_CONFIG_RELOAD_REFUSED));
	gauge(b, "config_generation", "Generation of the settings in force "
	    "(1 at start, +1 per applied SIGHUP).", (double)lv->gen);
	gauge(b, "config_applied_timestamp_seconds", "When the settings in "
	    "force were applied (unix time).", (double)lv->applied_at);
}

/*
 * revcheckd_build_info{version,revision} 1, then Prometheus' standard
 * process_* metrics (memory, CPU, descriptors, start time).
 */
static void
build_and_process(struct sbuf *b)
{
	char proc[2048];

	sbuf_adds(b, "# HELP revcheckd_build_info The running version and "
	    "the source revision it was built from.\n"
	    "# TYPE revcheckd_build_info gauge\n"
	    "revcheckd_build_info{version=\"" REVCHECK_VERSION "\",revision=");
	sbuf_add_label(b, procstat_revision(), strlen(procstat_revision()));
	sbuf_adds(b, "} 1\n");
	if (procstat_format(proc, sizeof(proc)) > 0)
		sbuf_adds(b, proc);
}

enum MHD_Result
handle_metrics(const struct server_req *r)
{
	struct server_ctx *ctx = r->ctx;
	struct snapshot *s;
	enum stale_reason sr = STALE_FRESH;
	int64_t now = util_now();
	struct sbuf b;

	sbuf_init(&b, 4096, 0);
	s = snapshot_acquire(ctx->slot);
	if (s != NULL)
		sr = snapshot_stale(s, &r->live->policy, now, ctx->slot);
	build_and_process(&b);
	filter_gauges(&b, s, sr, now);
	snapshot_release(s);
	counter(&b, "checks", "Keys checked.", metrics_get(MET_CHECKS));
	counter(&b, "filter_negative", "Answered not_revoked by the filter "
	    "(a zero bit, or a fingerprint mismatch in a fuse filter).",
	    metrics_get(MET_FILTER_NEGATIVE));
	counter(&b, "fallthrough", "Filter positives sent to the authority.",
	    metrics_get(MET_FALLTHROUGH));
	counter(&b, "confirmed_revoked", "Positives the authority confirmed.",
	    metrics_get(MET_CONFIRMED_REVOKED));
	counter(&b, "false_positive", "Positives the authority cleared.",
	    metrics_get(MET_FALSE_POSITIVE));
	counter(&b, "not_covered", "Keys in scopes the filter does not "
	    "cover.", metrics_get(MET_NOT_COVERED));
	counter(&b, "refused_stale", "Requests refused: filter stale.",
	    metrics_get(MET_REFUSED_STALE));
	counter(&b, "refused_no_filter", "Requests refused: no filter.",
	    metrics_get(MET_REFUSED_NO_FILTER));
	counter(&b, "authority_unavailable", "Positives left unsettled.",
	    metrics_get(MET_AUTHORITY_UNAVAILABLE));
	counter(&b, "authority_behind", "Positives refused because the "
	    "authority answered from an older filter version.",
	    metrics_get(MET_AUTHORITY_BEHIND));
	counter(&b, "bad_items", "Batch items answered with an error.",
	    metrics_get(MET_BAD_ITEMS));
	counter(&b, "delta_hits", "Keys decided by the delta overlay.",
	    metrics_get(MET_DELTA_HITS));
	sbuf_adds(&b, "# HELP revcheckd_exact_answers_total Keys of exact "
	    "scopes by answer: not_revoked and revoked from the filter alone, "
	    "unproven (a positive for a key not shown issued by the cutoff: "
	    "settled by the table or the authority).\n"
	    "# TYPE revcheckd_exact_answers_total counter\n");
	sbuf_addf(&b, "revcheckd_exact_answers_total{answer=\"not_revoked\"} "
	    "%llu\nrevcheckd_exact_answers_total{answer=\"revoked\"} %llu\n"
	    "revcheckd_exact_answers_total{answer=\"unproven\"} %llu\n",
	    (unsigned long long)metrics_get(MET_EXACT_NOT_REVOKED),
	    (unsigned long long)metrics_get(MET_EXACT_REVOKED),
	    (unsigned long long)metrics_get(MET_EXACT_UNPROVEN));
	counter(&b, "deltas_applied", "Deltas applied.",
	    metrics_get(MET_DELTA_APPLIED));
	counter(&b, "deltas_refused", "Delta chain files refused (bad "
	    "signature, gap, fork, replay, parse error).",
	    metrics_get(MET_DELTA_REFUSED));
	counter(&b, "slow_dropped", "Connections dropped for not completing "
	    "a request (headers and body) within conn_timeout.",
	    metrics_get(MET_SLOW_DROPPED));
	counter(&b, "body_memory_refused", "Requests refused (503) or cut "
	    "off because the bodies buffered at once reached max_body_total.",
	    metrics_get(MET_BODY_REFUSED));
	counter(&b, "fast_path_requests", "Single GET /v1/check requests the "
	    "fast path answered (fast_path).",
	    metrics_get(MET_FAST_PATH));
	counter(&b, "fast_path_handoffs", "Connections the fast path handed "
	    "to libmicrohttpd at a request it does not answer.",
	    metrics_get(MET_HANDOFF));
	loader_metrics(&b, ctx);
	longpoll_metrics(ctx->longpoll, &b);
	config_metrics(&b, r->live);
	srcq_metrics(&b, ctx->cfg->filter_dir);
	ocsp_metrics(&b, r->live);
	metrics_render_requests(&b);
	metrics_render_histograms(&b);
	if (ctx->metrics_extra != NULL)
		ctx->metrics_extra(&b, ctx->metrics_extra_arg);
	return reply_sbuf(r, MHD_HTTP_OK, &b,
	    "text/plain; version=0.0.4; charset=utf-8");
}

enum MHD_Result
handle_healthz(const struct server_req *r)
{
	struct sbuf b;

	sbuf_init(&b, 32, 0);
	sbuf_adds(&b, "{\"status\":\"ok\"}\n");
	return reply_sbuf(r, MHD_HTTP_OK, &b, CTYPE_JSON);
}

enum MHD_Result
handle_readyz(const struct server_req *r)
{
	const char *deg;
	const struct snapshot *s;
	enum stale_reason why;
	enum check_gate g;
	char msg[96];
	struct sbuf b;

	/* A probe is no refused check: the refusal counters stay as they are. */
	g = check_probe_begin(r->ctx->slot, &r->live->policy, util_now(), &s,
	    &why);
	if (g == CHECK_GATE_NO_FILTER)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "no_filter", "no verified filter is loaded", 0);
	if (g == CHECK_GATE_STALE) {
		snprintf(msg, sizeof(msg), "the filter is stale (%s)",
		    stale_reason_str(why));
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "filter_stale", msg, 0);
	}
	/*
	 * An edge that cannot settle positives answers negatives but not
	 * every check: 503 degraded, so that a load balancer prefers the
	 * edges that can (/healthz stays 200: the process is fine).
	 */
	deg = r->ctx->degraded != NULL ?
	    r->ctx->degraded(r->ctx->degraded_arg) : NULL;
	sbuf_init(&b, 96, 0);
	sbuf_adds(&b, deg != NULL ? "{\"ready\":false,\"degraded\":" :
	    "{\"ready\":true,\"degraded\":");
	if (deg != NULL)
		sbuf_add_jstrs(&b, deg);
	else
		sbuf_adds(&b, "null");
	sbuf_adds(&b, ",\"filter_version\":");
	sbuf_add_u64(&b, s->version);
	sbuf_adds(&b, "}\n");
	check_end(s);
	return reply_sbuf(r, deg != NULL ? MHD_HTTP_SERVICE_UNAVAILABLE :
	    MHD_HTTP_OK, &b, CTYPE_JSON);
}

/* True when an If-None-Match list names etag (weak or strong) or is "*". */
static bool
etag_match(const char *inm, const char *etag)
{
	size_t elen = strlen(etag), n;
	const char *p = inm, *q;

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		q = p;
		while (*q != '\0' && *q != ',')
			q++;
		n = (size_t)(q - p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 1 && p[0] == '*')
			return true;
		if (n > 2 && p[0] == 'W' && p[1] == '/') {
			p += 2;
			n -= 2;
		}
		if (n == elen && memcmp(p, etag, n) == 0)
			return true;
		p = q;
	}
	return false;
}

static void
release_cb(void *cls)
{
	ffile_close(cls);
}

/*
 * The version an immutable name asks for: /v1/filter/V or the V of
 * /v1/delta/V/SEQ (seq NULL: none after it). -1 when the path is not one.
 */
static int
immutable_name(const char *url, size_t prefix, uint64_t *version,
    uint64_t *seq)
{
	char num[24];
	const char *p = url + prefix, *slash;
	size_t n;

	slash = strchr(p, '/');
	n = slash != NULL ? (size_t)(slash - p) : strlen(p);
	if (n == 0 || n >= sizeof(num) || (slash != NULL) != (seq != NULL))
		return -1;
	memcpy(num, p, n);
	num[n] = '\0';
	if (util_parse_u64(num, UINT64_MAX, version) != 0)
		return -1;
	if (seq == NULL)
		return 0;
	return util_parse_u64(slash + 1, UINT64_MAX, seq) == 0 && *seq > 0 ?
	    0 : -1;
}

/* Body bytes of a 200 that goes out (HEAD sends none). */
static void
count_body(const struct server_req *r, size_t len)
{
	if (r->method == NULL || strcmp(r->method, "HEAD") != 0)
		metrics_response_bytes(r->ep, len);
}

/* An empty 304 with the headers h. */
static enum MHD_Result
not_modified(const struct server_req *r, const struct server_hdr *h,
    size_t nh)
{
	struct MHD_Response *resp;

	resp = MHD_create_response_from_buffer(0, (void *)"",
	    MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	return server_queue(r, MHD_HTTP_NOT_MODIFIED, resp, NULL, h, nh);
}

/*
 * Why the base in service is not served (the same for /v1/filter and
 * /v1/filter/V), or NULL.
 */
static enum MHD_Result
filter_refused(const struct server_req *r, const struct snapshot *s,
    int64_t now, bool *refused)
{
	*refused = true;
	if (now >= s->info->expires_at)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "filter_stale", "the filter has expired", 1);
	/*
	 * What goes out is the base file, and an edge verifies the base's
	 * own signed expires_at before it looks at any delta. With a chain
	 * in service s->info holds the newest head's times, which stay fresh
	 * after the base has expired: check the base itself, or an edge is
	 * sent a file it must refuse while this origin looks healthy.
	 */
	if (now >= ffile_info(s->ff)->expires_at)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "filter_stale", "the base filter has expired (its delta "
		    "chain is fresh; the publisher must re-base)", 1);
	/*
	 * Deltas once served on this base are owed (chain_behind): this
	 * node answers nothing from the base alone, and an edge without a
	 * rollback state of its own would answer from it, a key a delta
	 * revoked not_revoked from the filter.
	 */
	if (s->pos.seq < s->chain_need)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "filter_stale", "chain_behind: deltas once served on this "
		    "base are missing; the base alone is not served", 1);
	*refused = false;
	return MHD_YES;
}

/*
 * GET /v1/filter: the base in service, cacheable a minute at most. GET
 * /v1/filter/V: the same bytes under a name that never changes content
 * (404 when V is not in service), cacheable for good.
 */
enum MHD_Result
handle_filter(const struct server_req *r)
{
	struct server_hdr h[4];
	struct MHD_Response *resp;
	struct snapshot *s;
	struct ffile *ff;
	enum MHD_Result ret;
	const unsigned char *bytes;
	const char *inm;
	char cc[48], ver[24];
	int64_t now = util_now(), left;
	uint64_t want = 0;
	bool named = r->ep == EP_FILTER_FILE, refused;
	size_t len;

	if (named && immutable_name(r->url, strlen("/v1/filter/"), &want,
	    NULL) == -1)
		return server_error(r, MHD_HTTP_NOT_FOUND, "not_found",
		    "want /v1/filter/VERSION", 0);
	if ((s = snapshot_acquire(r->ctx->slot)) == NULL)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "no_filter", "no verified filter is loaded", 1);
	if (named && s->version != want) {
		snapshot_release(s);
		return server_error(r, MHD_HTTP_NOT_FOUND, "not_found",
		    "that version is not in service: ask /v1/filter", 0);
	}
	ret = filter_refused(r, s, now, &refused);
	if (refused) {
		snapshot_release(s);
		return ret;
	}
	/* A cache may keep these bytes only while the base itself is valid. */
	left = ffile_info(s->ff)->expires_at - now;
	if (left > FILTER_MAX_CACHE)
		left = FILTER_MAX_CACHE;
	if (named)
		snprintf(cc, sizeof(cc), "%s", CACHE_IMMUTABLE);
	else
		snprintf(cc, sizeof(cc), "public, max-age=%lld",
		    (long long)left);
	snprintf(ver, sizeof(ver), "%llu", (unsigned long long)s->version);
	h[0].name = MHD_HTTP_HEADER_ETAG;
	h[0].value = s->etag;
	h[1].name = MHD_HTTP_HEADER_LAST_MODIFIED;
	h[1].value = s->last_modified;
	h[2].name = MHD_HTTP_HEADER_CACHE_CONTROL;
	h[2].value = cc;
	h[3].name = HDR_FILTER_VERSION;
	h[3].value = ver;
	inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm != NULL && etag_match(inm, s->etag)) {
		/* The headers are copied into resp: release after queueing. */
		ret = not_modified(r, h, 4);
		snapshot_release(s);
		return ret;
	}
	/*
	 * Zero copy: the response holds the filter file (not the snapshot,
	 * whose table a slow reader would keep in memory after a reload)
	 * until it is sent.
	 */
	ff = ffile_ref(s->ff);
	bytes = ffile_bytes(ff, &len);
	resp = MHD_create_response_from_buffer_with_free_callback_cls(len,
	    (void *)bytes, release_cb, ff);
	if (resp == NULL) {
		ffile_close(ff);
		snapshot_release(s);
		return MHD_NO;
	}
	count_body(r, len);
	ret = server_queue(r, MHD_HTTP_OK, resp, "application/octet-stream",
	    h, 4);
	snapshot_release(s);	/* the headers were copied into resp */
	return ret;
}

/* What a /v1/delta response reads from: the shared chain, from off. */
struct delta_body {
	struct chainbuf	*cb;
	size_t		 off;
};

static ssize_t
delta_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	const struct delta_body *d = cls;
	size_t n = chainbuf_read(d->cb, d->off + (size_t)pos, buf, max);

	return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void
delta_done(void *cls)
{
	struct delta_body *d = cls;

	chainbuf_release(d->cb);
	free(d);
}

/*
 * Sends len bytes of s's chain from off (a reference to the chain, never
 * a copy) with the headers h, or refuses while the chains held for
 * readers are over delta_memory_max. Releases s in every case.
 */
static enum MHD_Result
delta_send(const struct server_req *r, struct snapshot *s, size_t off,
    size_t len, const struct server_hdr *h, size_t nh)
{
	struct MHD_Response *resp;
	struct delta_body *d;
	bool over;

	/*
	 * Only what is in service, the deltas it applied and then the head,
	 * as they were verified: one copy in memory, which every response
	 * holds a reference to until it is sent (never read from disk per
	 * request, never copied). Past delta_memory_max, chains that slow
	 * readers still hold (older bases) refuse new readers until they go.
	 */
	if (s->chain == NULL || chainbuf_live_bytes() >
	    r->ctx->cfg->delta_memory_max) {
		over = s->chain != NULL;
		snapshot_release(s);
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "chain_unavailable", over ? "the delta chains held for "
		    "readers are at delta_memory_max: retry later" : "the "
		    "chain is over delta_memory_max: wait for the next base",
		    1);
	}
	if ((d = malloc(sizeof(*d))) == NULL) {
		snapshot_release(s);
		return MHD_NO;
	}
	d->cb = chainbuf_ref(s->chain);
	d->off = off;
	snapshot_release(s);
	resp = MHD_create_response_from_callback(len, DELTA_BLOCK, delta_read,
	    d, delta_done);
	if (resp == NULL) {
		delta_done(d);
		return MHD_NO;
	}
	count_body(r, len);
	return server_queue(r, MHD_HTTP_OK, resp, "application/octet-stream",
	    h, nh);
}

/*
 * GET /v1/delta/V/SEQ: delta SEQ of the chain in service on base V, the
 * file as it was verified, under a name that never changes content.
 */
static enum MHD_Result
delta_file(const struct server_req *r)
{
	struct server_hdr h[4];
	struct snapshot *s;
	const char *inm;
	char etag[96], ver[24], seqs[24];
	uint64_t base, seq;
	size_t off, next, len;

	if (immutable_name(r->url, strlen("/v1/delta/"), &base, &seq) == -1)
		return server_error(r, MHD_HTTP_NOT_FOUND, "not_found",
		    "want /v1/delta/BASE/SEQ (SEQ from 1)", 0);
	if ((s = snapshot_acquire(r->ctx->slot)) == NULL)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "no_filter", "no verified filter is loaded", 1);
	if (s->version != base || s->chain == NULL ||
	    seq > chainbuf_deltas(s->chain)) {
		snapshot_release(s);
		return server_error(r, MHD_HTTP_NOT_FOUND, "not_found",
		    "no such delta in service: ask /v1/delta?base=&after=", 0);
	}
	/* The base's digest and the seq name the file: the chain never forks. */
	snprintf(etag, sizeof(etag), "\"%.16s-d%llu\"", s->sha_hex,
	    (unsigned long long)seq);
	snprintf(ver, sizeof(ver), "%llu", (unsigned long long)base);
	snprintf(seqs, sizeof(seqs), "%llu", (unsigned long long)seq);
	h[0].name = MHD_HTTP_HEADER_ETAG;
	h[0].value = etag;
	h[1].name = HDR_FILTER_VERSION;
	h[1].value = ver;
	h[2].name = HDR_DELTA_SEQ;
	h[2].value = seqs;
	h[3].name = MHD_HTTP_HEADER_CACHE_CONTROL;
	h[3].value = CACHE_IMMUTABLE;
	inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm != NULL && etag_match(inm, etag)) {
		snapshot_release(s);
		return not_modified(r, h, 4);
	}
	chainbuf_range(s->chain, seq - 1, &off, &len);
	chainbuf_range(s->chain, seq, &next, &len);
	return delta_send(r, s, off, next - off, h, 4);
}

/* What one /v1/delta?base=&after= asks. */
struct delta_query {
	uint64_t	 base;
	uint64_t	 after;
	uint64_t	 wait;		/* seconds granted; 0: answer now */
	bool		 head_only;	/* just the head (long-poll) */
	const char	*inm;		/* If-None-Match, or NULL */
};

/*
 * True when the answer to q is s's head alone: asked so, and the chain
 * in service holds a head (a delta applied before its head was written
 * is sent itself, with those before it, rather than nothing).
 */
static bool
head_alone(const struct snapshot *s, const struct delta_query *q)
{
	size_t off, len = 0;

	if (!q->head_only || s->chain == NULL)
		return false;
	chainbuf_range(s->chain, UINT64_MAX, &off, &len);
	return len > 0;
}

/*
 * True when s has nothing for q's client: same base, a chain, nothing
 * after its seq, and the head its If-None-Match names. Without a chain
 * the answer (404) is at once: the client polls, as it does a static
 * host.
 */
static bool
delta_nothing_new(const struct snapshot *s, const struct delta_query *q,
    const char *etag)
{
	if (s->version != q->base || s->chain_dir[0] == '\0' ||
	    s->chain == NULL)
		return false;
	return s->pos.seq <= q->after && q->inm != NULL &&
	    etag_match(q->inm, etag);
}

/*
 * An error answer to q; a long-poll's says it was held (X-Revcheck-Wait),
 * so that the client knows this upstream holds requests.
 */
static enum MHD_Result
delta_error(const struct server_req *r, const struct delta_query *q,
    const char *waits, unsigned status, const char *code, const char *msg)
{
	struct server_hdr h[1];
	struct sbuf b;
	char *body;
	size_t len;

	if (q->wait == 0)
		return server_error(r, status, code, msg, 0);
	sbuf_init(&b, 128, 0);
	server_render_error(&b, code, msg);
	sbuf_adds(&b, "\n");
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	h[0].name = HDR_WAIT;
	h[0].value = waits;
	return server_reply(r, status, body, len, CTYPE_JSON, h, 1);
}

/*
 * Answers q from s (released here): 409 another base, 404 no chain,
 * 304 when the If-None-Match names the answer, else the deltas after
 * q->after (none with head_only) and the head.
 */
static enum MHD_Result
delta_answer(const struct server_req *r, struct snapshot *s,
    const struct delta_query *q, const char *etag)
{
	struct server_hdr h[4];
	char ver[24], seqs[24], waits[24];
	size_t off, len, nh = 3;

	snprintf(waits, sizeof(waits), "%llu", (unsigned long long)q->wait);
	if (s->version != q->base) {
		snapshot_release(s);
		return delta_error(r, q, waits, MHD_HTTP_CONFLICT, "other_base",
		    "the base in service is another version: fetch /v1/filter");
	}
	if (s->chain_dir[0] == '\0') {
		snapshot_release(s);
		return server_error(r, MHD_HTTP_NOT_FOUND, "no_chain",
		    "no delta chain is in service", 0);
	}
	snprintf(ver, sizeof(ver), "%llu", (unsigned long long)s->version);
	snprintf(seqs, sizeof(seqs), "%llu", (unsigned long long)s->pos.seq);
	h[0].name = MHD_HTTP_HEADER_ETAG;
	h[0].value = etag;
	h[1].name = HDR_FILTER_VERSION;
	h[1].value = ver;
	h[2].name = HDR_DELTA_SEQ;
	h[2].value = seqs;
	if (q->wait > 0) {
		h[nh].name = HDR_WAIT;
		h[nh++].value = waits;
	}
	if (q->inm != NULL && etag_match(q->inm, etag)) {
		snapshot_release(s);
		return not_modified(r, h, nh);
	}
	if (s->chain == NULL)
		return delta_send(r, s, 0, 0, h, nh);	/* refuses */
	chainbuf_range(s->chain, head_alone(s, q) ? UINT64_MAX : q->after, &off,
	    &len);
	return delta_send(r, s, off, len, h, nh);
}

/* The query of /v1/delta, or -1 (400 answered into *ret). */
static int
dq_parse(const struct server_req *r, struct delta_query *q,
    enum MHD_Result *ret)
{
	const char *qb, *qa, *qw, *qh;
	uint64_t w = 0;

	memset(q, 0, sizeof(*q));
	qb = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "base");
	qa = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
	    "after");
	qw = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
	    "wait");
	qh = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
	    "head_only");
	if (qb == NULL || qa == NULL || util_parse_u64(qb, UINT64_MAX,
	    &q->base) != 0 || util_parse_u64(qa, UINT64_MAX, &q->after) != 0 ||
	    (qw != NULL && util_parse_u64(qw, UINT64_MAX, &w) != 0) ||
	    (qh != NULL && strcmp(qh, "1") != 0 && strcmp(qh, "0") != 0)) {
		*ret = server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "want ?base=VERSION&after=SEQ (unsigned integers), "
		    "optionally &wait=SECONDS and &head_only=1", 0);
		return -1;
	}
	q->wait = w;
	if (q->wait > (uint64_t)r->live->cfg.longpoll_wait_max)
		q->wait = (uint64_t)r->live->cfg.longpoll_wait_max;
	q->head_only = qh != NULL && strcmp(qh, "1") == 0;
	q->inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_IF_NONE_MATCH);
	return 0;
}

/*
 * GET /v1/delta?base=V&after=N[&wait=S][&head_only=1]. With wait, the
 * request is held (no thread: server_hold) while there is nothing new
 * for the client, at most S seconds (longpoll_wait_max), then answered.
 */
enum MHD_Result
handle_delta(const struct server_req *r)
{
	struct delta_query q;
	struct snapshot *s;
	enum MHD_Result ret;
	char etag[96];
	uint64_t gen;
	int tries, held;

	if (r->ep == EP_DELTA_FILE)
		return delta_file(r);
	if (dq_parse(r, &q, &ret) == -1)
		return ret;
	for (tries = 0;; tries++) {
		gen = r->ctx->longpoll != NULL ?
		    longpoll_gen(r->ctx->longpoll) : 0;
		if ((s = snapshot_acquire(r->ctx->slot)) == NULL)
			return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "no_filter", "no verified filter is loaded", 1);
		/*
		 * The bundle's tag names what it holds (after..seq and the
		 * head); the long-poll's the head alone.
		 */
		if (head_alone(s, &q))
			snprintf(etag, sizeof(etag), "\"%.16s-h%llu-%lld\"",
			    s->sha_hex, (unsigned long long)s->pos.seq,
			    (long long)s->info->issued_at);
		else
			snprintf(etag, sizeof(etag), "\"%.16s-%llu-%llu-%lld\"",
			    s->sha_hex, (unsigned long long)q.after,
			    (unsigned long long)s->pos.seq,
			    (long long)s->info->issued_at);
		if (q.wait == 0 || tries >= 3 || !delta_nothing_new(s, &q, etag))
			break;
		snapshot_release(s);
		if ((held = server_hold(r, (unsigned)q.wait, gen)) == 1)
			return MHD_YES;
		/* Stopping: the client asks again, elsewhere or later. */
		if (held == 0 && atomic_load(&r->ctx->draining))
			return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "shutting_down", "this node is stopping", 1);
		if (held == 0)
			tries = 3;	/* answer now */
	}
	return delta_answer(r, s, &q, etag);
}
