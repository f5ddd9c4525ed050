/*
 * detect.h - the storage type under a job's scratch directory, by the algorithm every tierlens
 * detector shares (tests/vectors/README.md). No heap allocation: results live in the caller's
 * fixed-size struct, and problems are reported in it, never by aborting.
 */
#ifndef TIERLENS_DETECT_H
#define TIERLENS_DETECT_H

#include "err.h"

#define TL_TYPE_LEN    16
#define TL_MAX_MODELS  16
#define TL_MODEL_LEN   128
#define TL_PATH_LEN    4096
/* Devices one detection may classify: members that lead back to their array (a sysfs that is
 * not what the kernel writes) would otherwise multiply the work at every level. */
#define TL_MAX_VISITS  64

struct tl_storage {
	char type[TL_TYPE_LEN];                     /* one of records.STORAGE_TYPES */
	int nmodels;
	char models[TL_MAX_MODELS][TL_MODEL_LEN];   /* device models, RAID members individually */
	char err[TL_ERR_LEN];                       /* why the answer is 'other', or "" */
	int visited;                                /* devices classified so far (bounded) */
};

/*
 * Storage type under `scratch`. Every /proc and /sys path is read under `root`
 * ("/" or "" for the live system; a fake tree for the test vectors).
 * Always fills `out` (type 'other' when unknown); returns 0, or -1 when
 * out->err says why the answer is less than complete.
 */
int tl_detect(const char *scratch, const char *root, struct tl_storage *out);

#endif
