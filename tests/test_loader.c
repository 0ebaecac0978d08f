/* test_loader.c - verification, rollback state, refusals and the audit log */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../svc/check.h"
#include "../svc/loader.h"
#include "../svc/metrics.h"
#include "../svc/sbuf.h"
#include "../svc/snapshot.h"
#include "stale.h"
#include "delta.h"
#include "log.h"
#include "publish.h"
#include "util.h"
#include "svc_fixture.h"

static const struct fx_rec recs[] = {
	{ "default", "t1", "keyCompromise", 1600000000 },
	{ "default", "t2", NULL, 0 },
};

static char dir[64], fdir[128], sdir[128], pub[160];
static EVP_PKEY *key;
static struct config cfg;
static struct stale_policy pol = { 0, 300, 0 };

static void
setup(void)
{
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/revcheck-test-loader-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fdir, sizeof(fdir), "%s/filters", dir);
	snprintf(sdir, sizeof(sdir), "%s/state", dir);
	snprintf(pub, sizeof(pub), "%s/key.pub", dir);
	cr_assert_eq(mkdir(fdir, 0755), 0);
	cr_assert_eq(mkdir(sdir, 0755), 0);
	cr_assert_not_null(key = sign_keygen());
	snprintf(err, sizeof(err), "%s/key.pem", dir);
	cr_assert_eq(sign_save(key, err, pub, false, err, sizeof(err)), 0);
	config_init(&cfg);
	cfg.filter_dir = strdup(fdir);
	cfg.state_dir = strdup(sdir);
	cfg.trusted_keys[cfg.ntrusted++] = strdup(pub);
	log_init("test_loader", LOG_LVL_ERR);
}

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void
teardown(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	EVP_PKEY_free(key);
	config_free(&cfg);
}

TestSuite(loader, .init = setup, .fini = teardown);

/*
 * A load event names a path and a reason that can hold any bytes (a file
 * name, an upstream's message): its JSON, for the audit log and
 * /v1/status, is valid UTF-8 with every such byte escaped or replaced
 * (json_add_str's sanitized copy: cJSON alone would pass invalid UTF-8
 * through), and '<' escaped as sbuf_add_jstr does.
 */
Test(loader, event_json_is_valid_for_any_bytes)
{
	struct loader_event ev;
	struct sbuf b;
	cJSON *o;

	memset(&ev, 0, sizeof(ev));
	ev.time = 1700000000;
	ev.version = UINT64_MAX;
	snprintf(ev.source, sizeof(ev.source), "/srv/f\xff\xfe/<x>\"\n"
	    "\xc0\xaf\xed\xa0\x80\x7f\\");
	snprintf(ev.reason, sizeof(ev.reason), "bad \xc3 byte\x01");
	snprintf(ev.signer, sizeof(ev.signer), "\xf4\x90\x80\x80&>");
	sbuf_init(&b, 64, 0);
	o = loader_event_json(&ev);
	sbuf_add_json(&b, o);
	cJSON_Delete(o);
	sbuf_adds(&b, "");
	cr_assert(sbuf_ok(&b));
	cr_assert(util_utf8_valid(b.p, b.len), "invalid UTF-8: %.*s",
	    (int)b.len, b.p);
	cr_assert_null(memchr(b.p, '<', b.len), "%.*s", (int)b.len, b.p);
	cr_assert(strstr(b.p, "\"version\":18446744073709551615,") != NULL,
	    "the version printed whole: %.*s", (int)b.len, b.p);
	o = cJSON_ParseWithLength(b.p, b.len);
	cr_assert_not_null(o, "not JSON: %.*s", (int)b.len, b.p);
	cr_assert_str_eq(cJSON_GetObjectItem(o, "event")->valuestring, "load");
	cr_assert_str_eq(cJSON_GetObjectItem(o, "source")->valuestring,
	    "/srv/f\xef\xbf\xbd\xef\xbf\xbd/<x>\"\n\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\x7f\\");
	cr_assert_str_eq(cJSON_GetObjectItem(o, "reason")->valuestring,
	    "bad \xef\xbf\xbd byte\x01");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "sha256")));
	cJSON_Delete(o);
	sbuf_free(&b);
}

/* Publishes version v built at issued_at; tamper flips one filter byte. */
static void
publish(EVP_PKEY *k, uint64_t v, int64_t issued, int64_t expires,
    size_t tamper, bool swap_table_of_other)
{
	struct fx_pair p, q;
	char err[256];

	cr_assert_eq(fx_build(k, v, issued, expires, recs, 2, NULL, 0,
	    1 << 12, 5, &p), 0);
	if (tamper != 0)
		p.filter[tamper] ^= 0x01;
	if (swap_table_of_other) {
		cr_assert_eq(fx_build(k, v, issued, expires, recs, 1, NULL,
		    0, 1 << 12, 5, &q), 0);
		free(p.table);
		p.table = q.table;
		p.tlen = q.tlen;
		q.table = NULL;
		fx_free(&q);
	}
	cr_assert_eq(publish_pair(fdir, v, p.filter, p.flen, p.table, p.tlen,
	    10, err, sizeof(err)), 0, "%s", err);
	fx_free(&p);
}

static uint64_t
serving(struct snapshot_slot *sl)
{
	struct snapshot *s = snapshot_acquire(sl);
	uint64_t v = s != NULL ? s->version : 0;

	snapshot_release(s);
	return v;
}

static size_t
audit_lines(const char *word)
{
	char path[256], line[2048];
	size_t n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", sdir, LOADER_AUDIT_NAME);
	if ((fp = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strstr(line, word) != NULL)
			n++;
	fclose(fp);
	return n;
}

Test(loader, accepts_then_refuses_rollback_and_tampering)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	uint64_t acc, rej;
	int64_t now = util_now();
	char err[512];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_poll(&l, &sl, false), 1, "nothing published yet");
	publish(key, 5, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 5);
	cr_assert_eq(loader_poll(&l, &sl, false), 1, "unchanged");
	cr_assert_eq(loader_poll(&l, &sl, true), 1, "same bytes");

	publish(key, 6, now, now + 600, 20, false);	/* tampered header */
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	cr_assert_eq(serving(&sl), 5);
	publish(key, 7, now, now + 600, 0, true);	/* other table */
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, &acc, &rej);
	cr_assert(strstr(ev.reason, "table") != NULL, "%s", ev.reason);
	publish(key, 8, now - 700, now - 100, 0, false);	/* expired */
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "expired") != NULL, "%s", ev.reason);
	publish(key, 9, now + 3600, now + 7200, 0, false);	/* future */
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	cr_assert_eq(serving(&sl), 5);

	publish(key, 10, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 10);
	cr_assert_eq(loader_highest(&l), 10);
	loader_stats(&l, &ev, &acc, &rej);
	cr_assert_eq(acc, 2);
	cr_assert_eq(rej, 4);
	cr_assert_eq(audit_lines("\"accepted\""), 2);
	cr_assert_eq(audit_lines("\"refused\""), 4);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * A base expired on its own is taken only while nothing fresh serves (its
 * chain may make it fresh; checks then answer 503 filter_stale until it
 * does), never in place of a fresh one.
 */
Test(loader, stale_base_taken_only_while_nothing_fresh_serves)
{
	struct snapshot_slot sl;
	struct snapshot *s;
	struct loader l;
	int64_t now = util_now();
	char err[512];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 5, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	publish(key, 6, now - 700, now - 100, 0, false);	/* expired */
	cr_assert_eq(loader_poll(&l, &sl, false), -1, "a fresh one serves");
	cr_assert_eq(serving(&sl), 5);
	loader_free(&l);
	snapshot_slot_free(&sl);

	/* A restart: nothing serves, the expired base is taken, stale. */
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 6);
	s = snapshot_acquire(&sl);
	cr_assert_eq(snapshot_stale(s, &pol, now, &sl), STALE_EXPIRED,
	    "checks refuse it until a chain makes it fresh");
	snapshot_release(s);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

Test(loader, rollback_is_refused_across_restarts)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	int64_t now = util_now();
	char err[512], src[256], dst[256];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 3, now, now + 600, 0, false);
	publish(key, 4, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 4);
	loader_free(&l);
	snapshot_slot_free(&sl);

	/* Point current back at version 3 and restart. */
	snprintf(src, sizeof(src), "v%020llu", 3ULL);
	snprintf(dst, sizeof(dst), "%s/current.tmp", fdir);
	cr_assert_eq(symlink(src, dst), 0);
	snprintf(src, sizeof(src), "%s/current", fdir);
	cr_assert_eq(rename(dst, src), 0);

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_highest(&l), 4);
	cr_assert_eq(loader_poll(&l, &sl, true), -1);
	cr_assert_eq(serving(&sl), 0, "no filter rather than an old one");
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "rollback") != NULL, "%s", ev.reason);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

Test(loader, same_version_other_bytes_is_refused)
{
	struct snapshot_slot sl;
	struct loader l, l2;
	struct loader_event ev;
	int64_t now = util_now();
	char err[512], vd[300];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 2, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	loader_free(&l);
	snapshot_slot_free(&sl);

	/* Rebuild version 2 (new issued_at: other bytes) in a fresh dir. */
	snprintf(vd, sizeof(vd), "%s/filters", dir);
	nftw(vd, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	cr_assert_eq(mkdir(vd, 0755), 0);
	publish(key, 2, now - 1, now + 600, 0, false);
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l2, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_poll(&l2, &sl, false), -1);
	loader_stats(&l2, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "different bytes") != NULL, "%s",
	    ev.reason);
	loader_free(&l2);
	snapshot_slot_free(&sl);
}

Test(loader, untrusted_signer_is_refused)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	EVP_PKEY *other = sign_keygen();
	int64_t now = util_now();
	char err[512];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(other, 1, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "signature") != NULL, "%s", ev.reason);
	cr_assert_eq(serving(&sl), 0);
	EVP_PKEY_free(other);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

Test(loader, corrupt_state_refuses_to_start)
{
	struct loader l;
	char err[512], path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", sdir, LOADER_STATE_NAME);
	cr_assert_not_null(fp = fopen(path, "w"));
	fputs("{\"signers\": 5}", fp);
	fclose(fp);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), -1);
	cr_assert(strstr(err, "corrupt") != NULL, "%s", err);
}

Test(loader, missing_key_is_named)
{
	struct loader l;
	char err[512];

	free(cfg.trusted_keys[0]);
	cfg.trusted_keys[0] = strdup("/nonexistent/key.pub");
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), -1);
	cr_assert(strstr(err, "trusted_key") != NULL, "%s", err);
}

/* Publishes version v of the records in a layout; tamper sets byte at. */
static void
publish_layout(enum bloom_layout layout, uint64_t v, int64_t now,
    size_t at, unsigned char val)
{
	struct fx_pair p;
	char err[256];

	cr_assert_eq(fx_build_layout(layout, key, v, now, now + 600, recs, 2,
	    NULL, 0, 1 << 12, 5, &p), 0, "%s", bloom_layout_name(layout));
	if (at != 0) {
		p.filter[at] = val;
		/* Signed again: only the field itself is wrong. */
		cr_assert_eq(sign_sign(key, p.filter, p.flen - SIGN_SIG_LEN,
		    p.filter + p.flen - SIGN_SIG_LEN), 0);
	}
	cr_assert_eq(publish_pair(fdir, v, p.filter, p.flen, p.table, p.tlen,
	    10, err, sizeof(err)), 0, "%s", err);
	fx_free(&p);
}

/* The layout of the served filter, its fill and FP estimate as status shows. */
static void
expect_serving(struct snapshot_slot *sl, uint64_t v, enum bloom_layout layout)
{
	struct snapshot *s = snapshot_acquire(sl);
	struct revkey k;
	char err[256];

	cr_assert_not_null(s);
	cr_assert_eq(s->version, v);
	cr_assert_eq(s->info->layout, layout, "version %llu is %s, want %s",
	    (unsigned long long)v, bloom_layout_name(s->info->layout),
	    bloom_layout_name(layout));
	cr_assert_eq(ffile_bloom(s->ff)->layout, layout);
	if (layout == BLOOM_FUSE || layout == BLOOM_FUSE8) {
		cr_assert(s->info->seglog >= 1 && s->info->seglog <= 18);
		cr_assert_eq(s->info->k, 3);
		/* fx_build_layout's k = 5 is BLOOM_FUSE's width here. */
		cr_assert_eq(s->info->width, layout == BLOOM_FUSE ? 5 : 0);
		cr_assert_eq(s->estimated_fp, layout == BLOOM_FUSE ?
		    1.0 / 32.0 : 1.0 / 256.0);
	} else {
		cr_assert_eq(s->info->seglog, 0);
		cr_assert_eq(s->info->width, 0);
	}
	cr_assert(s->fill_ratio > 0.0 && s->fill_ratio < 1.0, "fill %g",
	    s->fill_ratio);
	cr_assert_eq(revkey_from_text(&k, "default", "t1", 2, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert(ffile_query(s->ff, &k), "t1 missing from the %s filter",
	    bloom_layout_name(layout));
	cr_assert_eq(revkey_from_text(&k, "default", "t2", 2, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert(ffile_query(s->ff, &k), "t2 missing from the %s filter",
	    bloom_layout_name(layout));
	snapshot_release(s);
}

/*
 * An operator switching layouts between versions: each new version is
 * loaded whatever its layout; a fuse file with a bad segment length byte
 * (signed by a trusted key all the same) is refused and the previous
 * filter stays in service.
 */
Test(loader, switches_layouts_and_refuses_a_bad_fuse_segment_length)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	uint64_t acc, rej;
	int64_t now = util_now();
	char err[512];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish_layout(BLOOM_CLASSIC, 1, now, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 1, BLOOM_CLASSIC);
	publish_layout(BLOOM_FUSE, 2, now, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 2, BLOOM_FUSE);

	publish_layout(BLOOM_FUSE, 3, now, 11, 0);	/* segment log 0 */
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "offset 11") != NULL, "%s", ev.reason);
	expect_serving(&sl, 2, BLOOM_FUSE);
	publish_layout(BLOOM_FUSE, 4, now, 11, 19);
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "offset 11") != NULL, "%s", ev.reason);
	publish_layout(BLOOM_BLOCKED, 5, now, 11, 1);	/* not fuse: must be 0 */
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "offset 11") != NULL, "%s", ev.reason);
	expect_serving(&sl, 2, BLOOM_FUSE);

	publish_layout(BLOOM_BLOCKED, 6, now, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 6, BLOOM_BLOCKED);
	publish_layout(BLOOM_FUSE, 7, now, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 7, BLOOM_FUSE);

	/* The byte-cell layout of older builders is still served. */
	publish_layout(BLOOM_FUSE8, 8, now, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 8, BLOOM_FUSE8);
	/* A fingerprint width outside 4..16, or one in the byte layout. */
	publish_layout(BLOOM_FUSE, 9, now, 60, 17);
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "offset 60") != NULL, "%s", ev.reason);
	publish_layout(BLOOM_FUSE8, 10, now, 60, 8);
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "offset 60") != NULL, "%s", ev.reason);
	expect_serving(&sl, 8, BLOOM_FUSE8);
	publish_layout(BLOOM_FUSE, 11, now, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 11, BLOOM_FUSE);
	loader_stats(&l, &ev, &acc, &rej);
	cr_assert_eq(acc, 6);
	cr_assert_eq(rej, 5);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * Flips one byte of FILE (table.rct or filter.rcf) of the current pair in
 * place; a negative off counts from the end.
 */
static void
edit_current(const char *file, off_t off)
{
	char path[512];
	unsigned char c;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", fdir, PUBLISH_CURRENT, file);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(chmod(path, (st.st_mode & 0755) | S_IWUSR), 0);
	cr_assert((fd = open(path, O_RDWR)) >= 0, "%s", path);
	if (off < 0)
		off += st.st_size;
	cr_assert_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x01;
	cr_assert_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/*
 * The pair in service cannot be changed through its files, and a SIGHUP
 * (loader_reverify, then the forced poll) notices an edited table: the
 * verified bytes in memory serve on, and the mismatch is said (log,
 * audit, loader_disk_state) until a pair on disk loads again.
 */
Test(loader, table_edited_after_load_is_caught_on_reverify)
{
	struct snapshot_slot sl;
	struct snapshot *s;
	struct table_rec r;
	struct revkey k;
	struct loader l;
	struct loader_disk d;
	int64_t now = util_now();
	char err[512];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 5, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(loader_reverify(&l, &sl), 0, "an untouched pair");
	cr_assert_eq(serving(&sl), 5);
	cr_assert_not(loader_disk_state(&l, &d));
	/* The last byte of the file: "t2"'s id, which has no reason ("t3"). */
	edit_current(PUBLISH_TABLE_NAME, -1);
	cr_assert_not_null(s = snapshot_acquire(&sl));
	cr_assert_eq(revkey_from_text(&k, "default", "t2", 2, err,
	    sizeof(err)), 0);
	cr_assert_eq(table_lookup(s->tab, &k, &r), 1, "the edit reached "
	    "the table in service");
	snapshot_release(s);
	cr_assert_eq(loader_reverify(&l, &sl), 0);
	cr_assert_eq(serving(&sl), 5, "the verified pair left service");
	cr_assert(loader_disk_state(&l, &d));
	cr_assert_eq(d.served_version, 5);
	cr_assert(strstr(d.found, "changed on disk") != NULL, "%s", d.found);
	cr_assert_eq(audit_lines("\"event\":\"disk_mismatch\""), 1);
	/* The forced poll of the SIGHUP: the edited table is not loaded. */
	cr_assert_eq(loader_poll(&l, &sl, true), 1);
	cr_assert_eq(serving(&sl), 5);
	cr_assert(loader_disk_state(&l, &d));
	cr_assert(strstr(d.found, "table") != NULL, "%s", d.found);
	/* A good new pair loads and clears the mismatch. */
	publish(key, 6, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 6);
	cr_assert_not(loader_disk_state(&l, &d));
	/* The filter file edited in place is caught the same way. */
	edit_current(PUBLISH_FILTER_NAME, 200);
	cr_assert_eq(loader_reverify(&l, &sl), 0);
	cr_assert_eq(serving(&sl), 6);
	cr_assert(loader_disk_state(&l, &d));
	cr_assert(strstr(d.found, "filter.rcf changed on disk") != NULL, "%s",
	    d.found);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * The served version's directory replaced by an older one (a rollback,
 * refused): the verified pair in memory serves on, flagged; putting the
 * served version back clears the flag, and so does a newer version.
 */
Test(loader, served_pair_gone_from_disk_keeps_serving)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_disk d;
	int64_t now = util_now();
	char err[512], v5[256], keep[256], cur[256];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 4, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	publish(key, 5, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 5);
	/* Version 5's directory moved away, current back on version 4. */
	snprintf(v5, sizeof(v5), "%s/v%020u", fdir, 5);
	snprintf(keep, sizeof(keep), "%s/kept-v5", dir);
	snprintf(cur, sizeof(cur), "%s/%s", fdir, PUBLISH_CURRENT);
	cr_assert_eq(rename(v5, keep), 0);
	cr_assert_eq(unlink(cur), 0);
	snprintf(err, sizeof(err), "v%020u", 4);
	cr_assert_eq(symlink(err, cur), 0);
	cr_assert_eq(loader_reverify(&l, &sl), 0);
	cr_assert_eq(loader_poll(&l, &sl, true), -1, "the rollback refused");
	cr_assert_eq(serving(&sl), 5, "the verified pair left service");
	cr_assert(loader_disk_state(&l, &d));
	cr_assert_eq(d.served_version, 5);
	cr_assert(strstr(d.found, "rollback") != NULL, "%s", d.found);
	/* Version 5 put back: the same bytes, the flag clears. */
	cr_assert_eq(rename(keep, v5), 0);
	cr_assert_eq(unlink(cur), 0);
	snprintf(err, sizeof(err), "v%020u", 5);
	cr_assert_eq(symlink(err, cur), 0);
	cr_assert_eq(loader_reverify(&l, &sl), 0);
	cr_assert_eq(loader_poll(&l, &sl, true), 1);
	cr_assert_not(loader_disk_state(&l, &d), "%s", d.found);
	cr_assert_eq(serving(&sl), 5);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/* The mode is checked on the descriptor that is read, not on a path looked up before. */
Test(loader, group_writable_table_is_refused)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	int64_t now = util_now();
	char err[512], path[512];

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 5, now, now + 600, 0, false);
	snprintf(path, sizeof(path), "%s/%s/%s", fdir, PUBLISH_CURRENT,
	    PUBLISH_TABLE_NAME);
	cr_assert_eq(chmod(path, 0664), 0);
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "writable by group or others") != NULL,
	    "%s", ev.reason);
	cr_assert_eq(serving(&sl), 0);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(loader_poll(&l, &sl, true), 0);
	cr_assert_eq(serving(&sl), 5);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/* This process's peak resident memory in bytes (VmHWM). */
static uint64_t
peak_rss(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (uint64_t)ru.ru_maxrss * 1024;
}

#define HUGE_SPARSE	((off_t)1536 << 20)	/* 1.5 GiB, no blocks */

/*
 * A table whose size is not the one its verified filter names is refused
 * before a byte of it is read: a sparse 1.5 GiB file costs no memory, and
 * the message names the file, both sizes and what to do.
 */
Test(loader, table_of_another_size_is_refused_unread)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	int64_t now = util_now();
	char err[512], path[512];
	uint64_t before;

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 5, now, now + 600, 0, false);
	snprintf(path, sizeof(path), "%s/%s/%s", fdir, PUBLISH_CURRENT,
	    PUBLISH_TABLE_NAME);
	cr_assert_eq(truncate(path, HUGE_SPARSE), 0);
	before = peak_rss();
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	cr_assert_lt(peak_rss() - before, (uint64_t)64 << 20, "the table "
	    "was read: peak RSS grew by %llu bytes",
	    (unsigned long long)(peak_rss() - before));
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "table.rct: 1610612736 bytes, but the "
	    "signed filter says its table has ") != NULL, "%s", ev.reason);
	cr_assert(strstr(ev.reason, "not read") != NULL, "%s", ev.reason);
	cr_assert_eq(serving(&sl), 0);
	publish(key, 6, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 6);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * A filter file's owner and mode are checked with fstat before it is
 * read: a sparse 1.5 GiB filter that others may write is refused without
 * costing its size in memory.
 */
Test(loader, filter_with_bad_mode_is_refused_unread)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	int64_t now = util_now();
	char err[512], path[512];
	uint64_t before;

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 5, now, now + 600, 0, false);
	snprintf(path, sizeof(path), "%s/%s/%s", fdir, PUBLISH_CURRENT,
	    PUBLISH_FILTER_NAME);
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(truncate(path, HUGE_SPARSE), 0);
	before = peak_rss();
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	cr_assert_lt(peak_rss() - before, (uint64_t)64 << 20, "the filter "
	    "was read: peak RSS grew by %llu bytes",
	    (unsigned long long)(peak_rss() - before));
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "writable by group or others") != NULL,
	    "%s", ev.reason);
	cr_assert_eq(serving(&sl), 0);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * Trusted key files get the owner and mode checks of the filter and
 * table, on the descriptor read: owned by another user than root, the
 * daemon's or filter_owner, or writable by group or others, they stop
 * the start (and a SIGHUP's key reload). A group-writable filter is
 * refused like a group-writable table. Needs root (to chown), as CI runs.
 */
Test(loader, key_file_owner_and_mode_are_checked)
{
	struct snapshot_slot sl;
	struct loader l;
	struct loader_event ev;
	int64_t now = util_now();
	char err[512], fpath[512];

	if (geteuid() != 0)
		cr_skip_test("needs root to chown");
	snapshot_slot_init(&sl);
	cr_assert_eq(chown(pub, 65534, 65534), 0);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), -1);
	cr_assert(strstr(err, "trusted_key: ") != NULL &&
	    strstr(err, "key.pub: owned by uid 65534") != NULL, "%s", err);
	cfg.filter_owner = strdup("65534");
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(chmod(pub, 0664), 0);
	cr_assert_eq(loader_set_keys(&l, &sl, &cfg, err, sizeof(err)), -1);
	cr_assert(strstr(err, "key.pub: writable by group or others (mode "
	    "664)") != NULL, "%s", err);
	cr_assert_eq(chmod(pub, 0644), 0);
	cr_assert_eq(loader_set_keys(&l, &sl, &cfg, err, sizeof(err)), 0,
	    "%s", err);
	/* The filter: group-writable is refused, as the table is. */
	publish(key, 5, now, now + 600, 0, false);
	snprintf(fpath, sizeof(fpath), "%s/%s/%s", fdir, PUBLISH_CURRENT,
	    PUBLISH_FILTER_NAME);
	cr_assert_eq(chmod(fpath, 0620), 0);
	cr_assert_eq(loader_poll(&l, &sl, false), -1);
	loader_stats(&l, &ev, NULL, NULL);
	cr_assert(strstr(ev.reason, "writable by group or others") != NULL &&
	    strstr(ev.reason, PUBLISH_FILTER_NAME) != NULL, "%s", ev.reason);
	cr_assert_eq(serving(&sl), 0);
	cr_assert_eq(chmod(fpath, 0644), 0);
	cr_assert_eq(loader_poll(&l, &sl, true), 0);
	cr_assert_eq(serving(&sl), 5);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/* ---- delta chains (loader_poll_chain) ---------------------------------- */

/* Writes a delta or head into v1's delta/ directory as name. */
static void
put_chain_file(EVP_PKEY *k, enum delta_kind kind, uint64_t base_version,
    const unsigned char base_sha[32], uint64_t seq,
    const unsigned char prev[32], int64_t issued, int64_t expires,
    const struct delta_entry *e, size_t n, const char *name, size_t cut,
    unsigned char sha_out[32])
{
	struct delta_info in;
	unsigned char *buf = NULL;
	char ddir[256], err[256];
	size_t len;

	memset(&in, 0, sizeof(in));
	in.kind = kind;
	in.base_version = base_version;
	memcpy(in.base_sha256, base_sha, 32);
	in.seq = seq;
	memcpy(in.prev_sha256, prev, 32);
	in.issued_at = issued;
	in.expires_at = expires;
	in.changed_at = issued - 1;
	cr_assert_eq(delta_encode(&in, e, n, k, &buf, &len, err, sizeof(err)),
	    0, "%s", err);
	if (sha_out != NULL)
		cr_assert_eq(util_sha256(sha_out, buf, len), 0);
	snprintf(ddir, sizeof(ddir), "%s/v%020d/" DELTA_DIR, fdir, 1);
	cr_assert_eq(publish_file(ddir, name, buf, len - cut, err,
	    sizeof(err)), 0, "%s", err);
	free(buf);
}

static struct delta_entry
chain_ent(enum delta_op op, const char *id)
{
	struct delta_entry e;

	memset(&e, 0, sizeof(e));
	e.op = op;
	cr_assert_eq(revkey_set(&e.rec.key, "default", id, strlen(id)), 0);
	if (op == DELTA_ADD) {
		e.rec.revoked_at = 1700000000;
		memcpy(e.rec.reason, "superseded", 11);
	}
	return e;
}

/* The answer the snapshot in service gives for id; its delta seq too. */
static enum check_status
answer(struct snapshot_slot *sl, const char *id, uint64_t *seq,
    enum check_source *src)
{
	struct check_result r;
	struct snapshot *s = snapshot_acquire(sl);
	struct revkey k;

	cr_assert_not_null(s);
	cr_assert_eq(revkey_set(&k, "default", id, strlen(id)), 0);
	cr_assert_eq(check_key(s, &k, &r), 0);
	if (seq != NULL)
		*seq = s->pos.seq;
	if (src != NULL)
		*src = r.source;
	snapshot_release(s);
	return r.status;
}

static void
dname(char out[DELTA_NAME_LEN + 1], uint64_t seq)
{
	delta_file_name(out, seq);
}

Test(loader, delta_chain_applies_and_refuses_every_bad_link)
{
	struct snapshot_slot sl;
	struct loader l;
	struct snapshot *s;
	struct delta_entry e[2];
	unsigned char base[32], d1[32], d2[32], wrong[32];
	EVP_PKEY *other = sign_keygen();
	enum check_source src;
	int64_t now = util_now();
	uint64_t seq, refused;
	char err[512], n1[DELTA_NAME_LEN + 1], n2[DELTA_NAME_LEN + 1],
	    n3[DELTA_NAME_LEN + 1], path[512];

	dname(n1, 1);
	dname(n2, 2);
	dname(n3, 3);
	memset(wrong, 0x42, 32);
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 1, now - 100, now + 60, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(loader_poll_chain(&l, &sl), 1, "no chain yet");
	s = snapshot_acquire(&sl);
	memcpy(base, s->pos.base_sha256, 32);
	snapshot_release(s);

	/* Delta 1: t9 revoked, t1 (revoked in the table) released. */
	e[0] = chain_ent(DELTA_ADD, "t9");
	e[1] = chain_ent(DELTA_REMOVE, "t1");
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 1, base, now - 5,
	    now + 600, e, 2, n1, 0, d1);
	cr_assert_eq(answer(&sl, "t9", NULL, NULL), CHECK_NOT_REVOKED);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	cr_assert_eq(answer(&sl, "t9", &seq, &src), CHECK_REVOKED,
	    "an added key is revoked");
	cr_assert_eq(seq, 1, "the answer names the delta sequence");
	cr_assert_eq(src, CHECK_SRC_DELTA);
	cr_assert_eq(answer(&sl, "t1", NULL, &src), CHECK_NOT_REVOKED,
	    "a removal takes effect over the table");
	cr_assert_eq(src, CHECK_SRC_DELTA);
	cr_assert_eq(answer(&sl, "t2", NULL, NULL), CHECK_REVOKED,
	    "keys the chain did not touch answer from the base");
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->info->expires_at, now + 600,
	    "the delta's expiry is the chain's");
	cr_assert_eq(s->version, 1, "the base version is unchanged");
	snapshot_release(s);
	cr_assert_eq(loader_poll_chain(&l, &sl), 1, "nothing new");

	e[0] = chain_ent(DELTA_ADD, "t10");
	refused = metrics_get(MET_DELTA_REFUSED);
	/* Signed by an untrusted key. */
	put_chain_file(other, DELTA_KIND_DELTA, 1, base, 2, d1, now, now + 600,
	    e, 1, n2, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "untrusted signer");
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_NOT_REVOKED);
	cr_assert_eq(seq, 1);
	cr_assert(metrics_get(MET_DELTA_REFUSED) > refused, "counted");
	/* Truncated. */
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 2, d1, now, now + 600,
	    e, 1, n2, 7, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "truncated delta");
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_NOT_REVOKED);
	/* A fork: the right number, another predecessor. */
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 2, wrong, now,
	    now + 600, e, 1, n2, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "fork");
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_NOT_REVOKED);
	/* A replay: delta 1 again under the next name. */
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 1, base, now - 5,
	    now + 600, e, 1, n2, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "replay");
	/* Made for another base. */
	put_chain_file(key, DELTA_KIND_DELTA, 2, base, 2, d1, now, now + 600,
	    e, 1, n2, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "other base");
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_NOT_REVOKED);
	cr_assert_eq(seq, 1);

	/* A gap: delta 3 without delta 2 is never applied. */
	snprintf(path, sizeof(path), "%s/v%020d/" DELTA_DIR "/%s", fdir, 1,
	    n2);
	cr_assert_eq(unlink(path), 0);
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 3, wrong, now,
	    now + 600, e, 1, n3, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), 1, "a gap stops the walk");
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_NOT_REVOKED);
	cr_assert_eq(seq, 1);

	/* The missing delta arrives: 2 applies, then 3 is checked (a fork). */
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 2, d1, now, now + 600,
	    e, 1, n2, 0, d2);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "2 applied, 3 forks");
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_REVOKED);
	cr_assert_eq(seq, 2, "what linked before the bad file is applied");
	snprintf(path, sizeof(path), "%s/v%020d/" DELTA_DIR "/%s", fdir, 1,
	    n3);
	cr_assert_eq(unlink(path), 0);

	/* A head extends freshness; an older head never shortens it. */
	put_chain_file(key, DELTA_KIND_HEAD, 1, base, 2, d2, now + 1,
	    now + 3600, NULL, 0, DELTA_HEAD_NAME, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->info->expires_at, now + 3600);
	snapshot_release(s);
	put_chain_file(key, DELTA_KIND_HEAD, 1, base, 2, d2, now, now + 900,
	    NULL, 0, DELTA_HEAD_NAME, 0, NULL);
	(void)loader_poll_chain(&l, &sl);
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->info->expires_at, now + 3600, "no rollback of freshness");
	snapshot_release(s);
	/* A head of a fork is refused. */
	put_chain_file(key, DELTA_KIND_HEAD, 1, base, 2, wrong, now + 2,
	    now + 7200, NULL, 0, DELTA_HEAD_NAME, 0, NULL);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "a forked head");
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->info->expires_at, now + 3600);
	snapshot_release(s);

	/* A new base starts a new chain: the overlay is gone. */
	publish(key, 2, now, now + 60, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(answer(&sl, "t10", &seq, NULL), CHECK_NOT_REVOKED);
	cr_assert_eq(seq, 0);
	loader_free(&l);
	snapshot_slot_free(&sl);
	EVP_PKEY_free(other);
}

/*
 * The delta overlay over a fuse base (5-bit cells here): the chain decides
 * the keys it names, the fuse filter and the table every other key, and
 * no key built into the filter answers not_revoked unless a removal says so.
 */
Test(loader, delta_chain_over_a_fuse_base)
{
	struct snapshot_slot sl;
	struct loader l;
	struct snapshot *s;
	struct delta_entry e[2];
	unsigned char base[32], d1[32];
	enum check_source src;
	int64_t now = util_now();
	char err[512], n1[DELTA_NAME_LEN + 1];

	dname(n1, 1);
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish_layout(BLOOM_FUSE, 1, now - 100, 0, 0);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	expect_serving(&sl, 1, BLOOM_FUSE);
	s = snapshot_acquire(&sl);
	memcpy(base, s->pos.base_sha256, 32);
	snapshot_release(s);
	cr_assert_eq(answer(&sl, "t1", NULL, &src), CHECK_REVOKED);
	cr_assert_eq(answer(&sl, "t2", NULL, NULL), CHECK_REVOKED);

	e[0] = chain_ent(DELTA_ADD, "t9");
	e[1] = chain_ent(DELTA_REMOVE, "t1");
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 1, base, now - 5,
	    now + 300, e, 2, n1, 0, d1);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	cr_assert_eq(answer(&sl, "t9", NULL, &src), CHECK_REVOKED);
	cr_assert_eq(src, CHECK_SRC_DELTA);
	cr_assert_eq(answer(&sl, "t1", NULL, &src), CHECK_NOT_REVOKED);
	cr_assert_eq(src, CHECK_SRC_DELTA);
	cr_assert_eq(answer(&sl, "t2", NULL, &src), CHECK_REVOKED,
	    "a key the chain did not touch answers from the fuse base");
	cr_assert_eq(src, CHECK_SRC_AUTHORITATIVE);
	s = snapshot_acquire(&sl);
	cr_assert_eq(ffile_bloom(s->ff)->layout, BLOOM_FUSE);
	snapshot_release(s);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * The chain's files pass the checks of the filter and table, on the
 * descriptor that is read: a group-writable delta and a FIFO in its place
 * (which a plain open would wait on forever) are refused, and the same
 * delta written properly then applies.
 */
Test(loader, delta_chain_files_are_regular_and_not_group_writable,
    .timeout = 20)
{
	struct snapshot_slot sl;
	struct loader l;
	struct snapshot *s;
	struct delta_entry e[1];
	unsigned char base[32];
	int64_t now = util_now();
	uint64_t seq;
	char err[512], n1[DELTA_NAME_LEN + 1], path[512];

	dname(n1, 1);
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 1, now - 100, now + 60, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	s = snapshot_acquire(&sl);
	memcpy(base, s->pos.base_sha256, 32);
	snapshot_release(s);
	snprintf(path, sizeof(path), "%s/v%020d/" DELTA_DIR "/%s", fdir, 1, n1);
	e[0] = chain_ent(DELTA_ADD, "t9");

	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 1, base, now - 5,
	    now + 600, e, 1, n1, 0, NULL);
	cr_assert_eq(chmod(path, 0664), 0);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "a group-writable delta");
	cr_assert_eq(answer(&sl, "t9", &seq, NULL), CHECK_NOT_REVOKED);
	cr_assert_eq(seq, 0);

	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkfifo(path, 0644), 0);
	cr_assert_eq(loader_poll_chain(&l, &sl), -1, "a FIFO as a delta");
	cr_assert_eq(answer(&sl, "t9", &seq, NULL), CHECK_NOT_REVOKED);

	cr_assert_eq(unlink(path), 0);
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 1, base, now - 5,
	    now + 600, e, 1, n1, 0, NULL);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0, "the same delta, 0644");
	cr_assert_eq(answer(&sl, "t9", &seq, NULL), CHECK_REVOKED);
	cr_assert_eq(seq, 1);
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/* ---- the chain position across restarts (rollback state) --------------- */

/*
 * What a check would get from the slot at now with max_lag: "ok",
 * "no_filter" or the stale reason (stale_reason_str) that refuses it.
 */
static const char *
gate_lag(struct snapshot_slot *sl, int64_t now, int64_t max_lag)
{
	struct stale_policy lp = pol;
	const struct snapshot *s;
	enum stale_reason why;
	enum check_gate g;

	lp.max_lag = max_lag;
	g = check_begin(sl, &lp, now, &s, &why);
	check_end(s);
	if (g == CHECK_GATE_OK)
		return "ok";
	if (g == CHECK_GATE_NO_FILTER)
		return "no_filter";
	return stale_reason_str(why);
}

/* The same now, under the tests' policy. */
static const char *
gate(struct snapshot_slot *sl)
{
	return gate_lag(sl, util_now(), pol.max_lag);
}

/* The rollback state's "delta_seq" of its only signer, "" when absent. */
static void
state_delta_seq(char *out, size_t cap)
{
	char path[256];
	unsigned char *buf;
	size_t len;
	cJSON *root, *it, *ds;

	snprintf(path, sizeof(path), "%s/%s", sdir, LOADER_STATE_NAME);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, out, cap), 0);
	cr_assert_not_null(root = cJSON_ParseWithLength((char *)buf, len));
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root,
	    "signers")), 1);
	it = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "signers"), 0);
	ds = cJSON_GetObjectItem(it, "delta_seq");
	snprintf(out, cap, "%s", cJSON_IsString(ds) ? ds->valuestring : "");
	cJSON_Delete(root);
	free(buf);
}

/* Base version 1 with deltas 1 (adds t9) and 2 (adds t10) applied. */
static void
base_with_two_deltas(struct loader *l, struct snapshot_slot *sl,
    EVP_PKEY *dkey, int64_t now)
{
	struct delta_entry e[1];
	struct snapshot *s;
	unsigned char base[32], d1[32];
	char err[512], n1[DELTA_NAME_LEN + 1], n2[DELTA_NAME_LEN + 1];

	dname(n1, 1);
	dname(n2, 2);
	snapshot_slot_init(sl);
	cr_assert_eq(loader_init(l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 1, now - 100, now + 600, 0, false);
	cr_assert_eq(loader_poll(l, sl, false), 0);
	s = snapshot_acquire(sl);
	memcpy(base, s->pos.base_sha256, 32);
	snapshot_release(s);
	e[0] = chain_ent(DELTA_ADD, "t9");
	put_chain_file(dkey, DELTA_KIND_DELTA, 1, base, 1, base, now - 5,
	    now + 600, e, 1, n1, 0, d1);
	e[0] = chain_ent(DELTA_ADD, "t10");
	put_chain_file(dkey, DELTA_KIND_DELTA, 1, base, 2, d1, now - 4,
	    now + 600, e, 1, n2, 0, NULL);
	cr_assert_eq(loader_poll_chain(l, sl), 0);
	cr_assert_str_eq(gate(sl), "ok");
	cr_assert_eq(answer(sl, "t9", NULL, NULL), CHECK_REVOKED);
	cr_assert_eq(answer(sl, "t10", NULL, NULL), CHECK_REVOKED);
}

/* Moves v1's delta/ directory aside (to) or back (from). */
static void
move_deltas(bool back)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "%s/v%020d/" DELTA_DIR, fdir, 1);
	snprintf(b, sizeof(b), "%s/deltas-aside", dir);
	cr_assert_eq(back ? rename(b, a) : rename(a, b), 0);
}

/*
 * The chain position is persisted with the base's high-water mark before
 * the snapshot holding it serves, and read back by the next start.
 */
Test(loader, state_keeps_the_chain_position)
{
	struct snapshot_slot sl;
	struct loader l;
	int64_t now = util_now();
	char ds[512];

	base_with_two_deltas(&l, &sl, key, now);
	state_delta_seq(ds, sizeof(ds));
	cr_assert_str_eq(ds, "2", "the state names delta 2: \"%s\"", ds);
	loader_free(&l);
	snapshot_slot_free(&sl);

	/* A restart with the same files: the chain comes back, answers. */
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, ds, sizeof(ds)), 0, "%s",
	    ds);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_str_eq(gate(&sl), "chain_behind",
	    "the base alone does not answer, even for a moment");
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	cr_assert_str_eq(gate(&sl), "ok");
	cr_assert_eq(answer(&sl, "t10", NULL, NULL), CHECK_REVOKED);
	state_delta_seq(ds, sizeof(ds));
	cr_assert_str_eq(ds, "2");
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * The audit's repro: deltas applied, their files gone, a restart. The
 * base alone would say not_revoked for t9: it answers 503 chain_behind
 * until the files are back (the chain catches up) or a newer base loads.
 */
Test(loader, restart_without_deltas_is_chain_behind_until_caught_up)
{
	struct snapshot_slot sl;
	struct loader l;
	int64_t now = util_now();
	uint64_t seq;
	char err[512];

	base_with_two_deltas(&l, &sl, key, now);
	loader_free(&l);
	snapshot_slot_free(&sl);
	move_deltas(false);

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(loader_poll_chain(&l, &sl), 1, "no chain to apply");
	cr_assert_str_eq(gate(&sl), "chain_behind",
	    "never not_revoked from the base alone");
	cr_assert_eq(loader_poll_chain(&l, &sl), 1);
	cr_assert_str_eq(gate(&sl), "chain_behind");

	/* The deltas restored: the chain reaches seq 2 and answers again. */
	move_deltas(true);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	cr_assert_str_eq(gate(&sl), "ok");
	cr_assert_eq(answer(&sl, "t9", &seq, NULL), CHECK_REVOKED);
	cr_assert_eq(seq, 2);

	/* Gone again, restart, then a newer base replaces the behind one. */
	loader_free(&l);
	snapshot_slot_free(&sl);
	move_deltas(false);
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_str_eq(gate(&sl), "chain_behind");
	publish(key, 2, now, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_eq(serving(&sl), 2);
	cr_assert_str_eq(gate(&sl), "ok", "a new base owes no chain");
	state_delta_seq(err, sizeof(err));
	cr_assert_str_eq(err, "", "a new base starts its chain at 0");
	loader_free(&l);
	snapshot_slot_free(&sl);
}

/*
 * A rollback state written before the chain position existed (no
 * "delta_seq") still reads, and owes no chain; a "delta_seq" that is not
 * a number is corrupt and refuses the start like any corrupt state.
 */
Test(loader, old_state_format_is_read)
{
	struct snapshot_slot sl;
	struct loader l;
	struct snapshot *s;
	int64_t now = util_now();
	char err[512], path[256], sha[65], signer[65];
	FILE *fp;

	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	publish(key, 1, now - 100, now + 600, 0, false);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	s = snapshot_acquire(&sl);
	snprintf(sha, sizeof(sha), "%s", s->sha_hex);
	snprintf(signer, sizeof(signer), "%s", s->signer_hex);
	snapshot_release(s);
	loader_free(&l);
	snapshot_slot_free(&sl);

	snprintf(path, sizeof(path), "%s/%s", sdir, LOADER_STATE_NAME);
	cr_assert_not_null(fp = fopen(path, "w"));
	fprintf(fp, "{\"signers\":[{\"signer\":\"%s\",\"version\":\"1\","
	    "\"sha256\":\"%s\"}]}\n", signer, sha);
	fclose(fp);
	snapshot_slot_init(&sl);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(loader_highest(&l), 1);
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	cr_assert_str_eq(gate(&sl), "ok");
	loader_free(&l);
	snapshot_slot_free(&sl);

	cr_assert_not_null(fp = fopen(path, "w"));
	fprintf(fp, "{\"signers\":[{\"signer\":\"%s\",\"version\":\"1\","
	    "\"sha256\":\"%s\",\"delta_seq\":\"two\"}]}\n", signer, sha);
	fclose(fp);
	cr_assert_eq(loader_init(&l, &cfg, &pol, err, sizeof(err)), -1);
	cr_assert(strstr(err, "corrupt") != NULL, "%s", err);
}

/* Writes k's public key as a second trusted key and trusts it too. */
static void
trust_second(EVP_PKEY *k)
{
	char priv[256], pub2[256], err[256];

	snprintf(priv, sizeof(priv), "%s/key2.pem", dir);
	snprintf(pub2, sizeof(pub2), "%s/key2.pub", dir);
	cr_assert_eq(sign_save(k, priv, pub2, false, err, sizeof(err)), 0,
	    "%s", err);
	cfg.trusted_keys[cfg.ntrusted++] = strdup(pub2);
}

/*
 * Removing the key that signed a delta withdraws the snapshot holding it
 * at once (not only a base's signer), and the base reloaded without it
 * answers chain_behind: never base-only answers.
 */
Test(loader, withdrawn_delta_signer_takes_the_chain_out_of_service)
{
	struct snapshot_slot sl;
	struct loader l;
	EVP_PKEY *k2 = sign_keygen();
	char err[512];
	int rc;

	trust_second(k2);
	base_with_two_deltas(&l, &sl, k2, util_now());
	free(cfg.trusted_keys[--cfg.ntrusted]);
	cfg.trusted_keys[cfg.ntrusted] = NULL;
	cr_assert_eq(loader_set_keys(&l, &sl, &cfg, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(serving(&sl), 0, "out of service at once");
	cr_assert_str_eq(gate(&sl), "no_filter");
	cr_assert_eq(loader_poll(&l, &sl, false), 0, "the base reloads");
	rc = loader_poll_chain(&l, &sl);
	cr_assert_eq(rc, -1, "its deltas no longer verify: %d", rc);
	cr_assert_str_eq(gate(&sl), "chain_behind");
	loader_free(&l);
	snapshot_slot_free(&sl);
	EVP_PKEY_free(k2);
}

/* The same for a head that extended freshness, signed by the withdrawn key. */
Test(loader, withdrawn_head_signer_takes_the_chain_out_of_service)
{
	struct snapshot_slot sl;
	struct loader l;
	struct snapshot *s;
	EVP_PKEY *k2 = sign_keygen();
	int64_t now = util_now();
	char err[512];

	trust_second(k2);
	base_with_two_deltas(&l, &sl, key, now);
	s = snapshot_acquire(&sl);
	put_chain_file(k2, DELTA_KIND_HEAD, 1, s->pos.base_sha256, 2,
	    s->pos.last_sha256, now, now + 86400, NULL, 0, DELTA_HEAD_NAME, 0,
	    NULL);
	snapshot_release(s);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->info->expires_at, now + 86400);
	snapshot_release(s);
	free(cfg.trusted_keys[--cfg.ntrusted]);
	cfg.trusted_keys[cfg.ntrusted] = NULL;
	cr_assert_eq(loader_set_keys(&l, &sl, &cfg, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(serving(&sl), 0, "out of service at once");
	/* Reloaded: the deltas by the trusted key apply, the head does not. */
	cr_assert_eq(loader_poll(&l, &sl, false), 0);
	(void)loader_poll_chain(&l, &sl);
	cr_assert_str_eq(gate(&sl), "ok");
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->pos.seq, 2);
	cr_assert_eq(s->info->expires_at, now + 600, "no withdrawn freshness");
	snapshot_release(s);
	loader_free(&l);
	snapshot_slot_free(&sl);
	EVP_PKEY_free(k2);
}


/*
 * A verified head of the base in service naming deltas the node cannot
 * get starts the max_lag clock, as a newer base it cannot load does:
 * the node knows of revocations it lacks. After max_lag it answers 503
 * chain_lag until the deltas arrive. A head by an untrusted key or of
 * another base moves nothing.
 */
Test(loader, head_ahead_of_the_chain_starts_the_lag_clock)
{
	struct snapshot_slot sl;
	struct loader l;
	struct snapshot *s;
	struct delta_entry e[1];
	EVP_PKEY *other = sign_keygen();
	unsigned char base[32], d2[32], d3[32], d4[32], zero[32];
	int64_t now = util_now(), lag = 60;
	char n3[DELTA_NAME_LEN + 1], n4[DELTA_NAME_LEN + 1], a[256], b[256];

	dname(n3, 3);
	dname(n4, 4);
	memset(zero, 0x5a, sizeof(zero));
	base_with_two_deltas(&l, &sl, key, now);
	s = snapshot_acquire(&sl);
	memcpy(base, s->pos.base_sha256, 32);
	memcpy(d2, s->pos.last_sha256, 32);
	snapshot_release(s);
	cr_assert_str_eq(gate_lag(&sl, now + 2 * lag, lag), "ok",
	    "caught up: no clock");

	/* Unverified claims: a head by an untrusted key, of another base. */
	put_chain_file(other, DELTA_KIND_HEAD, 1, base, 9, zero, now,
	    now + 600, NULL, 0, DELTA_HEAD_NAME, 0, NULL);
	(void)loader_poll_chain(&l, &sl);
	cr_assert_str_eq(gate_lag(&sl, now + 2 * lag, lag), "ok",
	    "a badly signed head starts no clock");
	put_chain_file(key, DELTA_KIND_HEAD, 1, zero, 9, zero, now + 1,
	    now + 600, NULL, 0, DELTA_HEAD_NAME, 0, NULL);
	(void)loader_poll_chain(&l, &sl);
	cr_assert_str_eq(gate_lag(&sl, now + 2 * lag, lag), "ok",
	    "a head of another base starts no clock");

	/* The signed head names delta 4; delta 3 is there, 4 is withheld. */
	e[0] = chain_ent(DELTA_ADD, "t11");
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 3, d2, now - 3,
	    now + 600, e, 1, n3, 0, d3);
	e[0] = chain_ent(DELTA_ADD, "t12");
	put_chain_file(key, DELTA_KIND_DELTA, 1, base, 4, d3, now - 2,
	    now + 600, e, 1, "withheld", 0, d4);
	put_chain_file(key, DELTA_KIND_HEAD, 1, base, 4, d4, now + 2,
	    now + 900, NULL, 0, DELTA_HEAD_NAME, 0, NULL);
	(void)loader_poll_chain(&l, &sl);
	s = snapshot_acquire(&sl);
	cr_assert_eq(s->pos.seq, 3, "delta 3 applied: %llu",
	    (unsigned long long)s->pos.seq);
	snapshot_release(s);
	cr_assert_str_eq(gate_lag(&sl, now + 2, lag), "ok",
	    "within max_lag it still answers");
	cr_assert_str_eq(gate_lag(&sl, now + 2 + lag, lag), "chain_lag",
	    "max_lag after a verified head named delta 4, delta 3 serves");
	cr_assert_str_eq(gate_lag(&sl, now + 2 + lag, 0), "ok",
	    "max_lag 0: off");

	/* Delta 4 arrives: caught up, fresh again at once. */
	snprintf(a, sizeof(a), "%s/v%020d/" DELTA_DIR "/withheld", fdir, 1);
	snprintf(b, sizeof(b), "%s/v%020d/" DELTA_DIR "/%s", fdir, 1, n4);
	cr_assert_eq(rename(a, b), 0);
	cr_assert_eq(loader_poll_chain(&l, &sl), 0);
	cr_assert_str_eq(gate_lag(&sl, now + 2 + lag, lag), "ok",
	    "caught up: the clock stops");
	cr_assert_eq(answer(&sl, "t12", NULL, NULL), CHECK_REVOKED);
	loader_free(&l);
	snapshot_slot_free(&sl);
	EVP_PKEY_free(other);
}
