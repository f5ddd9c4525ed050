/*
 * tl_core.h - the parts of the tierlens SPANK plugin that do not need Slurm:
 * storage detection, A/B arm choice, XRD_MONINFO merging and the spool record.
 *
 * Nothing here allocates memory: every result lives in caller-owned, fixed-size
 * buffers, so nothing can be leaked and nothing can grow without bound.
 * Every function reports problems through an error string and never aborts.
 */
#ifndef TIERLENS_TL_CORE_H
#define TIERLENS_TL_CORE_H

#include <stddef.h>
#include <sys/types.h>

#define TL_TYPE_LEN    16
#define TL_MAX_MODELS  16
#define TL_MODEL_LEN   128
#define TL_PATH_LEN    4096
#define TL_ERR_LEN     512

struct tl_storage {
	char type[TL_TYPE_LEN];                     /* one of DESIGN.md's storage types */
	int nmodels;
	char models[TL_MAX_MODELS][TL_MODEL_LEN];   /* device models, RAID members individually */
	char err[TL_ERR_LEN];                       /* why the answer is 'other', or "" */
};

/*
 * Storage type under `scratch`. Every /proc and /sys path is read under `root`
 * ("/" or "" for the live system; a fake tree for the test vectors).
 * Always fills `out` (type 'other' when unknown); returns 0, or -1 when
 * out->err says why the answer is less than complete.
 */
int tl_detect(const char *scratch, const char *root, struct tl_storage *out);

/* FNV-1a 32-bit hash; the arm for a hashed trial is arms[fnv1a32(job_id) % narms]. */
unsigned int tl_fnv1a32(const char *s);

/*
 * XRD_MONINFO for the job: `identity` alone, or the user's `existing` value with
 * ",<identity>" appended. Unchanged when `existing` already ends with the identity
 * (an srun inside an sbatch inherits it). Returns 0, or -1 when `out` is too small.
 */
int tl_moninfo(const char *existing, const char *identity, char *out, size_t outlen);

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
