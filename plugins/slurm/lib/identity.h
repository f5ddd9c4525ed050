/*
 * identity.h - what ties a job step to its file accesses and to its trial arm: the A/B arm
 * hash and the XRD_MONINFO value the XRootD client reports at login.
 */
#ifndef TIERLENS_IDENTITY_H
#define TIERLENS_IDENTITY_H

#include <stddef.h>

/* FNV-1a 32-bit hash; the arm for a hashed trial is arms[fnv1a32(job_id) % narms]. */
unsigned int tl_fnv1a32(const char *s);

/*
 * XRD_MONINFO for the job: `identity` alone, or the user's `existing` value with
 * ",<identity>" appended. Unchanged when `existing` already ends with the identity
 * (an srun inside an sbatch inherits it). Returns 0, or -1 when `out` is too small.
 */
int tl_moninfo(const char *existing, const char *identity, char *out, size_t outlen);

#endif
