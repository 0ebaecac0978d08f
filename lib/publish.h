/* publish.h - the output directory: versioned pairs, atomic switch, pruning */
#ifndef REVCHECK_PUBLISH_H
#define REVCHECK_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Directory layout (docs/FORMAT.md):
 *   DIR/v00000000000000000042/filter.rcf   the signed filter
 *   DIR/v00000000000000000042/table.rct    its authoritative table
 *   DIR/current -> v00000000000000000042    symlink, switched last
 * A reader resolves "current" once (publish_current) and opens both files
 * inside that version directory, so it never mixes two pairs.
 */
#define PUBLISH_CURRENT		"current"
#define PUBLISH_FILTER_NAME	"filter.rcf"
#define PUBLISH_TABLE_NAME	"table.rct"

/*
 * Resolves DIR/current. On success returns 0, writes the version
 * directory's path into vdir (cap bytes) and the version into *version.
 * Returns 1 when DIR has no current pair yet, -1 with err on failure.
 */
int publish_current(const char *dir, char *vdir, size_t cap,
    uint64_t *version, char *err, size_t errlen);

/*
 * Publishes a pair as version: writes both files into a temporary
 * directory inside DIR, fsyncs them and it, renames it to its version
 * name, fsyncs DIR, then switches "current" with a rename of a fresh
 * symlink and fsyncs DIR again. Any failure (an fsync error included,
 * never retried) removes the temporaries and leaves DIR as it was.
 * Afterwards keeps the newest `keep` versions and removes older ones.
 * Returns 0, or -1 with err.
 */
int publish_pair(const char *dir, uint64_t version,
    const unsigned char *filter, size_t filter_len,
    const unsigned char *table, size_t table_len, unsigned keep,
    char *err, size_t errlen);

#endif
