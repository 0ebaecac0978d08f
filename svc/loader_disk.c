/* loader_disk.c - the pair in service is not on disk: served on from memory, said loudly */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "loader.h"
#include "log.h"
#include "util.h"

/* One JSON line to the audit log: what is served, what the disk has. */
static void
audit_mismatch(struct loader *l, const struct loader_disk *d)
{
	struct sbuf b;
	cJSON *o;

	if ((o = cJSON_CreateObject()) == NULL)
		return;
	json_add_time(o, "time", d->since);
	cJSON_AddStringToObject(o, "event", "disk_mismatch");
	json_add_u64(o, "served_version", d->served_version);
	json_add_str(o, "served_sha256", d->served_sha256);
	json_add_str(o, "found", d->found);
	sbuf_init(&b, 512, 0);
	sbuf_add_json(&b, o);
	sbuf_adds(&b, "\n");
	cJSON_Delete(o);
	pthread_mutex_lock(&l->load_mu);	/* audit_fd may be reopened */
	if (sbuf_ok(&b) && l->audit_fd != -1 &&
	    util_write_all(l->audit_fd, b.p, b.len) == -1)
		log_err("audit log %s: %s", l->audit_path, strerror(errno));
	pthread_mutex_unlock(&l->load_mu);
	sbuf_free(&b);
}

void
loader_disk_flag(struct loader *l, struct snapshot_slot *sl,
    const char *found)
{
	struct loader_disk d;
	struct snapshot *s;
	bool same;

	if ((s = snapshot_acquire(sl)) == NULL)
		return;	/* nothing served: nothing to keep serving */
	memset(&d, 0, sizeof(d));
	d.mismatch = true;
	d.since = util_now();
	d.served_version = s->version;
	memcpy(d.served_sha256, s->sha_hex, sizeof(d.served_sha256));
	snprintf(d.found, sizeof(d.found), "%s", found);
	snapshot_release(s);
	pthread_mutex_lock(&l->ev_mu);
	same = l->disk.mismatch && l->disk.served_version == d.served_version &&
	    strcmp(l->disk.found, d.found) == 0;
	if (!same) {
		if (l->disk.mismatch)
			d.since = l->disk.since;
		l->disk = d;
	}
	pthread_mutex_unlock(&l->ev_mu);
	if (same)
		return;
	log_err("filter version %llu in service (sha256 %.16s...) is not on "
	    "disk: %s; still serving it from memory, where it was verified, "
	    "until it expires; restore its directory or publish a version "
	    "above it", (unsigned long long)d.served_version,
	    d.served_sha256, d.found);
	audit_mismatch(l, &d);
}

void
loader_disk_clear(struct loader *l)
{
	uint64_t v;
	bool was;

	pthread_mutex_lock(&l->ev_mu);
	was = l->disk.mismatch;
	v = l->disk.served_version;
	memset(&l->disk, 0, sizeof(l->disk));
	pthread_mutex_unlock(&l->ev_mu);
	if (was)
		log_info("the filter in service is what the disk has again "
		    "(was version %llu, served from memory only)",
		    (unsigned long long)v);
}

bool
loader_disk_state(struct loader *l, struct loader_disk *out)
{
	pthread_mutex_lock(&l->ev_mu);
	*out = l->disk;
	pthread_mutex_unlock(&l->ev_mu);
	return out->mismatch;
}

cJSON *
loader_disk_json(struct loader *l)
{
	struct loader_disk d;
	cJSON *o;

	if (!loader_disk_state(l, &d))
		return cJSON_CreateNull();
	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	json_add_time(o, "since", d.since);
	json_add_u64(o, "served_version", d.served_version);
	json_add_str(o, "served_sha256", d.served_sha256);
	json_add_str(o, "found", d.found);
	return o;
}
