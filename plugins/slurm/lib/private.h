/*
 * private.h - the job's private /tmp: where Slurm's namespace plugins put the storage behind it.
 *
 * With job_container/tmpfs (24.11; namespace/tmpfs from 25.11, job_container.conf) or
 * namespace/linux (25.11+, namespace.yaml) each job gets its own /tmp and /dev/shm. /tmp is a bind
 * mount of <BasePath>/<job id>/... (or of a per-directory base_path), or a fresh tmpfs where the
 * site says so; /dev/shm is always a fresh tmpfs. Inside the job's mount namespace mountinfo shows
 * the bind mount with the backing device's numbers, but a SPANK hook that runs outside it (no
 * SlurmdParameters=contain_spank) sees the node's own /tmp. So the storage of a private directory
 * is taken from the configuration: the device under <base>/<job id>, once that directory exists
 * (the plugin creates it for every job whose namespace is live), or tmpfs.
 *
 * Parsing works on a caller's buffer and allocates nothing; anything it does not understand is
 * skipped, and the worst outcome is "not private" (the ordinary detection).
 */
#ifndef TIERLENS_PRIVATE_H
#define TIERLENS_PRIVATE_H

#include <stddef.h>

#include "detect.h"

#define TL_PRIV_MAX      8
#define TL_PRIV_PATH_LEN 256

struct tl_private_dir {
	char path[TL_PRIV_PATH_LEN];    /* the directory as the job sees it, e.g. /tmp */
	char base[TL_PRIV_PATH_LEN];    /* its own backing root (namespace.yaml dir_confs), or "" */
	int tmpfs;                      /* a fresh tmpfs, not a bind mount */
};

struct tl_private {
	int ndirs;
	struct tl_private_dir dirs[TL_PRIV_MAX];
	int nbases;                     /* every BasePath / base_path of the file, any node's */
	char bases[TL_PRIV_MAX][TL_PRIV_PATH_LEN];
	char source[TL_PRIV_PATH_LEN];  /* the file it came from, for the log */
};

/* job_container.conf: "[NodeName=...] BasePath=... [Dirs=...]" lines, keys in any case. */
void tl_private_parse_conf(const char *text, size_t len, struct tl_private *p);

/* namespace.yaml: base_path, dirs and dir_confs (path, base_path, tmpfs), read line by line. */
void tl_private_parse_yaml(const char *text, size_t len, struct tl_private *p);

/*
 * Read <root><conf_dir>/namespace.yaml, else <root><conf_dir>/job_container.conf (at most 64 KiB;
 * a symlink is not followed). Returns 1 when one was read, 0 when neither exists, -1 on an error
 * (err says which).
 */
int tl_private_load(const char *conf_dir, const char *root, struct tl_private *p, char *err, size_t errlen);

/*
 * Where the storage of `scratch` comes from for job `job_id` on node `node`:
 *   0  not in a private directory of a live job namespace (detect scratch itself);
 *   1  a tmpfs (a fresh one: /dev/shm, or tmpfs: true);
 *   2  backed by the directory written to `backing` (root-relative), e.g. /var/nvme/storage/42
 *      (or /var/nvme/storage/<node>/42: Slurm built for multiple slurmds adds the node name).
 * `%h` and `%n` in a base path are the node name. Directories are checked with lstat under
 * `root`; a symlink is never followed.
 */
int tl_private_backing(const struct tl_private *p, const char *root, const char *scratch,
		       unsigned int job_id, const char *node, char *backing, size_t len);

#endif
