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

/* Bytes of a SLUID as Slurm prints it ('s' + 13 base32 digits) with its NUL. */
#define TL_SLUID_LEN 15

/*
 * 1 when `s` is the SLUID of a job's run as Slurm 26.05 prints it (print_sluid: 's' and 13
 * upper-case Crockford base32 digits) with a cluster part other than 0 (reserved: accounting
 * records written before SLUIDs print their db_index in the same form); else 0.
 * Same rule as tierlens.records.valid_sluid.
 */
int tl_valid_sluid(const char *s);

/*
 * The job identity: "slurm.<cluster>.<job_id>", with ".<sluid>" after it when `sluid` is a valid
 * SLUID (else it is ignored). Same string as tierlens.records.job_identity('slurm', cluster,
 * job_id, sluid). Returns 0, or -1 when `out` is too small.
 */
int tl_identity(const char *cluster, unsigned int job_id, const char *sluid, char *out, size_t outlen);

/*
 * XRD_MONINFO with the identity `old_id` (the last comma-separated token, as tl_moninfo appends
 * it) replaced by `new_id`; without `old_id` at the end, as tl_moninfo(existing, new_id).
 * Returns 0, or -1 when `out` is too small.
 */
int tl_moninfo_swap(const char *existing, const char *old_id, const char *new_id, char *out, size_t outlen);

#endif
