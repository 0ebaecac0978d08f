/* fuzz_delta.c - the delta parser on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Entries re-encoded; a larger delta is only walked. */
#define ENCODE_MAX	1024
/* Header offsets (docs/FORMAT.md section 6.1). */
#define OFF_SIGNER	152

static EVP_PKEY *fuzz_key;
static struct sign_ring fuzz_ring;
static struct delta_entry ents[ENCODE_MAX];

/*
 * delta_link against the positions the delta's own header names: the one
 * it extends (or vouches for) and the ones it must refuse.
 */
static void
check_link(const struct delta *d)
{
	const struct delta_info *in = delta_info(d);
	struct delta_pos pos;
	char err[512];
	enum delta_link l;

	memset(&pos, 0, sizeof(pos));
	pos.base_version = in->base_version;
	memcpy(pos.base_sha256, in->base_sha256, 32);
	memcpy(pos.last_sha256, in->prev_sha256, 32);
	pos.seq = in->kind == DELTA_KIND_HEAD ? in->seq : in->seq - 1;
	if (delta_link(d, &pos, err, sizeof(err)) != (in->kind ==
	    DELTA_KIND_HEAD ? DELTA_LINK_HEAD : DELTA_LINK_NEXT))
		__builtin_trap();
	pos.last_sha256[0] ^= 1;
	l = delta_link(d, &pos, err, sizeof(err));
	if (l != DELTA_LINK_FORK || err[0] == '\0')
		__builtin_trap();
	pos.last_sha256[0] ^= 1;
	if (pos.seq < UINT64_MAX - 1) {
		pos.seq++;
		if (delta_link(d, &pos, err, sizeof(err)) != DELTA_LINK_OLD)
			__builtin_trap();
		pos.seq--;
	}
	if (pos.seq > 0) {
		pos.seq--;
		if (delta_link(d, &pos, err, sizeof(err)) != DELTA_LINK_GAP)
			__builtin_trap();
		pos.seq++;
	}
	pos.base_version ^= 1;
	if (delta_link(d, &pos, err, sizeof(err)) != DELTA_LINK_OTHER_BASE)
		__builtin_trap();
}

/*
 * One valid encoding: delta_encode, given what was parsed, writes the
 * same bytes but for the signer and the signature, and what it writes
 * parses to the same content and verifies under its key (and under no
 * other: the parsed file's signer is not in the ring).
 */
static void
check_encode(const struct delta *d, const uint8_t *data, size_t size,
    uint64_t n)
{
	const struct delta_info *in = delta_info(d);
	const unsigned char *b;
	struct delta_entry e;
	struct delta *d2;
	unsigned char *out;
	size_t olen, blen;
	char err[512];
	uint64_t i;

	if (delta_encode(in, ents, (size_t)n, fuzz_key, &out, &olen, err,
	    sizeof(err)) != 0)
		__builtin_trap();
	if (olen != size || memcmp(out, data, OFF_SIGNER) != 0 ||
	    memcmp(out + DELTA_HDR_LEN, data + DELTA_HDR_LEN,
	    size - DELTA_HDR_LEN - SIGN_SIG_LEN) != 0)
		__builtin_trap();
	if ((d2 = delta_parse(out, olen, err, sizeof(err))) == NULL ||
	    delta_verify(d2, &fuzz_ring, err, sizeof(err)) != 0 ||
	    delta_info(d2)->nentries != n)
		__builtin_trap();
	for (i = 0; i < n; i++)
		if (delta_get(d2, i, &e) != 0 || e.op != ents[i].op ||
		    revkey_cmp(&e.rec.key, &ents[i].rec.key) != 0 ||
		    e.rec.revoked_at != ents[i].rec.revoked_at ||
		    strcmp(e.rec.reason, ents[i].rec.reason) != 0)
			__builtin_trap();
	b = delta_bytes(d2, &blen);
	if (blen != olen || memcmp(b, out, olen) != 0)
		__builtin_trap();
	if (memcmp(in->signer, delta_info(d2)->signer, SIGN_KEYID_LEN) != 0 &&
	    delta_verify(d, &fuzz_ring, err, sizeof(err)) == 0)
		__builtin_trap();
	delta_free(d2);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct delta_entry e, prev;
	struct delta *d;
	size_t offs[3], lens[3];
	unsigned char *two;
	char err[512];
	uint64_t i, n;

	if (fuzz_key == NULL) {
		if ((fuzz_key = sign_keygen()) == NULL)
			abort();
		sign_ring_init(&fuzz_ring);
		if (sign_ring_add_key(&fuzz_ring, fuzz_key) != 0)
			abort();
	}
	d = delta_parse(data, size, err, sizeof(err));
	if (d == NULL) {
		if (err[0] == '\0')
			__builtin_trap();	/* every refusal says why */
		return 0;
	}
	/* A delta that parses has strictly ascending, readable entries. */
	n = delta_info(d)->nentries;
	for (i = 0; i < n; i++) {
		if (delta_get(d, i, &e) != 0)
			__builtin_trap();
		if (e.op != DELTA_ADD && e.op != DELTA_REMOVE)
			__builtin_trap();
		if (i > 0 && revkey_cmp(&prev.rec.key, &e.rec.key) >= 0)
			__builtin_trap();
		if (e.op == DELTA_REMOVE && (e.rec.revoked_at != 0 ||
		    e.rec.reason[0] != '\0'))
			__builtin_trap();
		if (i < ENCODE_MAX)
			ents[i] = e;
		prev = e;
	}
	if (delta_get(d, n, &e) != -1)
		__builtin_trap();
	check_link(d);
	if (n <= ENCODE_MAX)
		check_encode(d, data, size, n);
	/* A bundle of it, twice: split where the headers say. */
	if ((two = malloc(2 * size)) == NULL)
		abort();
	memcpy(two, data, size);
	memcpy(two + size, data, size);
	if (delta_bundle_split(two, 2 * size, offs, lens, 3, err,
	    sizeof(err)) != 2 || offs[0] != 0 || lens[0] != size ||
	    offs[1] != size || lens[1] != size ||
	    delta_bundle_split(two, 2 * size - 1, offs, lens, 3, err,
	    sizeof(err)) != -1)
		__builtin_trap();
	free(two);
	delta_free(d);
	return 0;
}
