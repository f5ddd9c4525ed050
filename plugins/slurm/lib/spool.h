/*
 * spool.h - the per-step spool record: a JSON writer on a fixed buffer, and the safe write of
 * the record into the spool directory that `tierlens ingest slurm` reads.
 */
#ifndef TIERLENS_SPOOL_H
#define TIERLENS_SPOOL_H

#include <stddef.h>

/* A JSON writer on a fixed buffer: overflow is remembered, never written past. */
struct tl_json {
	char *buf;
	size_t len, cap;
	int overflow;
};
void tl_json_init(struct tl_json *j, char *buf, size_t cap);
void tl_json_raw(struct tl_json *j, const char *s);
void tl_json_str(struct tl_json *j, const char *s);           /* quoted, escaped; NULL -> null */
void tl_json_key(struct tl_json *j, const char *key, int first);

/*
 * Write `data` (len bytes) as `dir`/`name`, safely: `dir` must be a real directory
 * (not a symlink) owned by the effective user and not writable by group or others;
 * it is created 0755 when missing. The record goes to a temporary file opened with
 * O_EXCL|O_NOFOLLOW, then is renamed into place. Returns 0, or -1 with `err` set.
 */
int tl_spool_write(const char *dir, const char *name, const char *data, size_t len,
		   char *err, size_t errlen);

#endif
