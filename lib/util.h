/* util.h - small shared helpers: hex, SHA-256, time, numbers, whole-file reads */
#ifndef REVCHECK_UTIL_H
#define REVCHECK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct stat;

#define UTIL_SHA256_LEN 32
#define UTIL_RFC3339_LEN 21	/* "2026-11-30T05:49:15Z" plus NUL */

/*
 * Writes 2*len lowercase hex digits and a NUL into out, which must hold
 * 2*len+1 bytes. This function can't fail.
 */
void util_hex(char *out, const unsigned char *in, size_t len);

/*
 * Decodes hex text into bytes. Accepts upper and lower case; when
 * allow_colons is true, single ':' separators between byte pairs are
 * skipped (as openssl prints serials); every group of digits but the
 * first has an even count, so that they fall between bytes ("a:0b",
 * "dead:beef", never "12:3", which could mean 12 03 or 01 23). An odd
 * digit count is taken as a leading zero nibble. Returns the number of bytes written, or -1 when the
 * text has a non-hex character, is empty, or needs more than cap bytes.
 */
long util_unhex(unsigned char *out, size_t cap, const char *in, size_t len,
    bool allow_colons);

/*
 * printf into err[errlen] (nothing when err is NULL or errlen 0): the
 * one writer of the "what went wrong" strings lib functions return.
 */
void util_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "dir/name" into out[cap]. Returns 0, or -1 when it does not fit. */
int util_path_join(char *out, size_t cap, const char *dir, const char *name);

/* The value of hex digit c (either case), or -1. */
int util_hexval(int c);

/*
 * Decodes %XX escapes of s[0..*len) in place ('+' is kept: nginx escapes
 * it) and sets *len to the decoded length. 0, or -1 on a '%' not followed
 * by two hex digits (s then partly decoded).
 */
int util_pct_decode(char *s, size_t *len);

/*
 * SHA-256 of a buffer into out[32]. Returns 0, or -1 if OpenSSL fails.
 * On a thread that gives way (util_give_way), hashed a stretch at a time
 * with a util_give_way_point after each.
 */
int util_sha256(unsigned char out[UTIL_SHA256_LEN], const void *buf,
    size_t len);

/*
 * SHA-256 of a whole file, read in chunks (the file may be larger than
 * memory allows twice). Returns 0, or -1 with err naming the file.
 */
int util_sha256_file(const char *path, unsigned char out[UTIL_SHA256_LEN],
    char *err, size_t errlen);

/* Formats t as RFC 3339 UTC ("%Y-%m-%dT%H:%M:%SZ") into out[21]. */
void util_rfc3339(char out[UTIL_RFC3339_LEN], int64_t t);

/*
 * Parses RFC 3339 ("2026-11-30T05:49:15Z", fractional seconds and a
 * numeric offset accepted) into seconds since the epoch. Returns 0, or -1
 * on malformed text.
 */
int util_parse_rfc3339(const char *s, int64_t *out);

/*
 * Parses a duration: a positive integer with an optional unit s, m, h or d
 * ("90", "15m", "1h", "7d"). Returns 0, or -1 when malformed, zero, or
 * over 100 years.
 */
int util_parse_duration(const char *s, int64_t *out);

/*
 * Parses an unsigned decimal integer that must fill the whole string and
 * not exceed max. Returns 0, or -1.
 */
int util_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Parses a finite double that fills the whole string. Returns 0, or -1. */
int util_parse_double(const char *s, double *out);

/*
 * Seconds since the epoch. REVCHECK_FAKE_NOW (decimal seconds), when set in
 * the environment at the first call, pins the clock for the process's whole
 * life: tests use it to build expired or future files; it is read once, so
 * an answer costs no getenv. revcheckd refuses to start with it set.
 *
 * Never less than the wall clock at the first call plus the time the
 * system has run since (CLOCK_BOOTTIME): forward it follows the wall
 * clock, stepped back (by an operator, by NTP, or by someone who spoofs
 * NTP to an edge, so that an expired filter would look fresh again) it
 * keeps counting from where it was. A clock that was ahead and is put
 * right therefore stays ahead until the process restarts: filters look
 * older, never newer.
 */
int64_t util_now(void);

/*
 * util_now()'s rule: max(wall, wall_first + (boot - boot_first)), in
 * whole seconds of a sum taken in nanoseconds.
 */
int64_t util_clock_floor(const struct timespec *wall,
    const struct timespec *wall_first, const struct timespec *boot,
    const struct timespec *boot_first);

/* Monotonic seconds as a double, for rates and progress. */
double util_monotime(void);

/*
 * Adds delta (> 0) to the calling thread's nice value, at most 19: the
 * thread then yields to the others of the process (Linux keeps a nice
 * value per thread; threads it creates afterwards inherit it). An
 * unprivileged thread cannot take it back. Returns the new nice value, or
 * -1 with errno (EPERM where seccomp denies setpriority).
 */
int util_lower_thread_priority(int delta);

/*
 * Makes the calling thread give way: from now on util_give_way_point
 * calls sched_yield() each time the work it is told of adds up to bytes
 * (0: never, the default of every thread). A lower nice value alone does
 * not stop a thread that is running from keeping its CPU for a whole
 * time slice (several milliseconds under EEVDF) while a woken thread of
 * higher priority waits behind it; long loops of a thread that gives way
 * (a table's validation, SHA-256 of a large buffer) hand the CPU over
 * every bytes instead. Thread-local: other threads are not affected.
 */
void util_give_way(size_t bytes);

/* Counts bytes of work done; yields when the thread's stretch is full. */
void util_give_way_point(size_t bytes);

/* The calling thread's yields so far (for tests and benchmarks). */
uint64_t util_give_way_count(void);

/*
 * Reads a whole file (or standard input when path is "-") into a fresh
 * NUL-terminated buffer of at most max bytes. On success returns 0 and the
 * caller owns *out (free()). On failure returns -1, *out is NULL and err
 * says what went wrong and where.
 */
int util_read_file(const char *path, size_t max, unsigned char **out,
    size_t *outlen, char *err, size_t errlen);

/*
 * util_read_file, and when stp is not NULL (a file a configuration names:
 * a key, a JWKS, a secret, a filter) also fills *stp with fstat() of the
 * descriptor that was read (so checks on owner and mode apply to the very
 * bytes returned); a failing fstat is then an error. With stp the file is
 * opened with O_NONBLOCK (cleared once it proved regular) and anything but
 * a regular file is refused ("not a regular file"), so that a FIFO or a
 * device given as a path cannot hang the caller. Without stp, pipes and
 * "-" (standard input) are read as before (filterbuild inputs).
 */
int util_read_file_st(const char *path, size_t max, unsigned char **out,
    size_t *outlen, struct stat *stp, char *err, size_t errlen);

/*
 * Copies the regular file open on fd (name is for messages) into private,
 * read-only anonymous memory: nothing done to the file afterwards, in
 * place or by truncation, can change or fault the copy. The file must hold
 * between min and max bytes and keep its size while it is read. From
 * UTIL_COPY_DIRECT_MIN bytes on it is read with O_DIRECT (flags restored
 * after), past the page cache, where the file system allows. On success
 * returns 0 with *map and *len set; the caller releases the copy with
 * util_copy_free(*map, *len). On failure returns -1 with err. fd stays
 * open and its offset is not used (pread).
 */
int util_copy_fd(int fd, const char *name, uint64_t min, uint64_t max,
    void **map, size_t *len, char *err, size_t errlen);
#define UTIL_COPY_DIRECT_MIN	(1u << 20)

/*
 * Releases a copy of util_copy_fd; the caller must not touch it again.
 * Unmapped, unless util_copy_keep is on: then it becomes the one spare
 * buffer (of it and a spare before it, the smaller is unmapped), and the
 * next util_copy_fd of a file within a factor of two of its size reads
 * into it instead of into fresh memory. Any thread; NULL is a no-op.
 */
void util_copy_free(void *map, size_t len);

/*
 * Turns the spare buffer on or off (off at start). Off unmaps the spare:
 * what a process that keeps one calls before it exits. A long-lived
 * process that reloads large files (revcheckd) turns it on; it costs one
 * released copy's memory between loads.
 */
void util_copy_keep(bool on);

/*
 * Unmaps the spare once it has been parked max_idle seconds or more: a
 * process that reloads now and then gives the memory back, one that
 * reloads every few seconds keeps reading into it. Returns the bytes
 * unmapped (0: none). Any thread.
 */
size_t util_copy_trim(double max_idle);

/* The bytes the spare holds (0: none). */
size_t util_copy_spare(void);

/*
 * Makes the pages of [p, p + len) that lie wholly inside it present and
 * writable before their first write (MADV_POPULATE_WRITE): one call maps
 * them in a batch instead of one page fault per page, which on machines
 * where a fault is costly (a paravirtualised MMU: measured 2.9 ms per MB
 * written into fresh memory against 1.3 with the pages populated first)
 * is most of the price of fresh memory. A range of UTIL_HUGE_MIN or more
 * is asked for in 2 MB pages first (MADV_HUGEPAGE; with the kernel's
 * "madvise" setting, Debian's default, only such ranges get them): a
 * 10^8-id build took 37-42 s so against 50-51 s in small pages on the
 * same VM, its shadow page tables holding one entry per 2 MB instead of
 * 512 (10^7 ids: no difference the noise let through). The contents are
 * not changed, so bytes already written stay. A hint: failure (an old
 * kernel, no memory now, no 2 MB pages: the later write faults as it
 * would have, or in small pages) is ignored.
 */
void util_populate(void *p, size_t len);

#define UTIL_HUGE_MIN	((size_t)2 << 20)

/*
 * What a growing buffer populates ahead of its writer at a time: enough
 * to batch the faults, little enough that the pages populated but not yet
 * written add at most this to the peak.
 */
#define UTIL_POPULATE_STEP	((size_t)32 << 20)

/*
 * A thread that prepares a buffer ahead of its one writer: it populates
 * (util_populate) and then reads one byte of every page of each step of
 * [base, base + len) in order, at most two steps past where the writer is,
 * so that the writer's first writes find the pages ready. On machines
 * where a page's first touch is costly (a paravirtualised MMU: even a
 * populated page costs about 1.3 ms per MB at its first touch from user
 * space), that cost moves to the other core. The writer calls
 * util_prefault_need() before writing at or past what the last call
 * returned; the two never touch the same step at once, and the contents
 * are never changed. NULL (no thread, no memory) is a valid handle: the
 * calls then do nothing, as for a buffer of under two steps.
 */
struct util_prefault;

struct util_prefault *util_prefault_start(void *base, size_t len);

/*
 * The writer is about to write below offset upto: waits while the thread
 * touches that part, and returns the offset below which it may now write
 * without calling again (at least upto).
 */
size_t util_prefault_need(struct util_prefault *pf, size_t upto);

/* Stops and joins the thread; NULL is a no-op. */
void util_prefault_stop(struct util_prefault *pf);

/*
 * Writes len bytes fully to fd, retrying on EINTR and short writes.
 * Returns 0, or -1 with errno set.
 */
int util_write_all(int fd, const void *buf, size_t len);

/*
 * Appends n bytes of data to the growing buffer *p (*len bytes used, *cap
 * allocated; all zero/NULL at first; the caller frees *p), never to more
 * than max bytes in all. Returns 0, or -1 with nothing appended and errno
 * EFBIG (max would be passed) or ENOMEM.
 */
int util_buf_append(unsigned char **p, size_t *len, size_t *cap,
    const void *data, size_t n, uint64_t max);

/*
 * JSON allows no raw control byte but tab, LF and CR (RFC 8259), and an
 * escaped NUL (\u0000) cannot survive cJSON's C strings: a string would
 * be cut at it and another id used. cJSON accepts both, so every reader of
 * outside JSON calls this first. Returns why the text is refused, or NULL
 * when its bytes are acceptable. This function can't fail.
 */
const char *util_json_refused(const char *p, size_t len);

/*
 * Length of the valid UTF-8 sequence at s[0..n) (1..4; 1 for ASCII), or 0
 * when it is invalid (overlong, a surrogate, above U+10FFFF, cut). n must
 * be at least 1. This function can't fail.
 */
size_t util_utf8_len(const unsigned char *s, size_t n);

/* True when p[0..n) is valid UTF-8. This function can't fail. */
bool util_utf8_valid(const void *p, size_t n);

/*
 * The value (0-63) of a base64 character: of the base64url alphabet (RFC
 * 4648 section 5) when url, else of the standard one (section 4). -1 for
 * anything else, padding included. This function can't fail.
 */
int util_b64_value(unsigned char c, bool url);

/*
 * Decodes unpadded base64url text (RFC 4648 section 5) into out (at least
 * len * 3 / 4 bytes). Rejects any character outside the alphabet, a
 * length that leaves one dangling character, and non-zero unused bits (so
 * each byte string has exactly one encoding). Returns the decoded length,
 * or -1 with *bad set to the offending position.
 */
long util_b64url_decode(unsigned char *out, const char *in, size_t len,
    size_t *bad);

/*
 * Little-endian stores and loads, independent of the host's byte order.
 * Inline: a table's index and records are read through them once per
 * record at every load and per probe at every lookup (the compiler turns
 * each into one load or store on a little-endian host).
 */
static inline void
util_put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void
util_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void
util_put_le64(unsigned char *p, uint64_t v)
{
	util_put_le32(p, (uint32_t)v);
	util_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t
util_get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t
util_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
util_get_le64(const unsigned char *p)
{
	return (uint64_t)util_get_le32(p) | (uint64_t)util_get_le32(p + 4) << 32;
}

/*
 * A sequential writer of one new, empty file that keeps what it writes
 * out of the page cache where the file system allows it (O_DIRECT):
 * a table of half a gigabyte is then not copied into freshly allocated
 * cache pages on its way to the disk. Bytes go through a UTIL_DW_BUF
 * buffer aligned to UTIL_DW_ALIGN; the last, partial block is written
 * padded and the file cut back to its length (ftruncate). Where O_DIRECT
 * is refused (tmpfs, some network file systems: EINVAL at fcntl or at the
 * first write) the same bytes go through the page cache instead. The
 * caller still fsyncs and closes fd.
 */
#define UTIL_DW_ALIGN	4096
#define UTIL_DW_BUF	(4u << 20)

struct util_dwriter {
	int		 fd;
	unsigned char	*buf;
	size_t		 len;		/* bytes in buf */
	uint64_t	 off;		/* bytes written before buf */
	bool		 direct;
};

/*
 * Returns 0, or -1 with errno (ENOMEM, or fcntl's) and nothing to free.
 * fd must be empty, at offset 0.
 * direct false: through the page cache from the start.
 */
int util_dw_open(struct util_dwriter *w, int fd, bool direct);
/* Returns 0, or -1 with errno. */
int util_dw_write(struct util_dwriter *w, const void *p, size_t n);
/* Writes what is buffered; frees the buffer. Returns 0, or -1 with errno. */
int util_dw_close(struct util_dwriter *w);
/* Frees the buffer after a failure. */
void util_dw_abort(struct util_dwriter *w);

/*
 * The one rule for a file this process trusts (a filter, its table, a
 * public key, a secret), on st from fstat of the descriptor that was
 * read: owned by root, by this process's user (who names it in err:
 * "the daemon's") or by owner when owner_set, and writable by neither
 * group nor others; when secret (a private signing key, an HMAC or
 * client secret), not readable by them either. Returns 0, or -1 with
 * err naming path, its owner or mode, and what was expected.
 */
int util_file_trusted(const char *path, const struct stat *st, uid_t owner,
    bool owner_set, bool secret, const char *who, char *err, size_t errlen);

#endif
