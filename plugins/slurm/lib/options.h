/*
 * options.h - the plugstack.conf arguments of the tierlens plugin (the list in tierlens_spank.c)
 * and what follows from them for one job: its A/B arm, cache route and the arm's variables.
 * No Slurm here, so the parser runs under the fuzzer (plugins/slurm/fuzz/); problems are
 * reported through the caller's log function and the option is ignored, never fatal.
 */
#ifndef TIERLENS_OPTIONS_H
#define TIERLENS_OPTIONS_H

#include <stddef.h>

#include "detect.h"

#define TL_MAX_ARMS     8
#define TL_ARM_LEN      32
#define TL_MAX_ARM_ENV  16
#define TL_VAL_LEN      1024
#define TL_ARM_VAR_LEN  256
#define TL_RECORD_MIN   1024
#define TL_RECORD_MAX   65536

struct tl_options {
	char scratch[TL_PATH_LEN];
	char spool[TL_PATH_LEN];
	char cluster[128];
	int hashed;
	int narms;
	char arms[TL_MAX_ARMS][TL_ARM_LEN];
	int nenv;
	char env_arm[TL_MAX_ARM_ENV][TL_ARM_LEN];
	char env_var[TL_MAX_ARM_ENV][TL_ARM_VAR_LEN];
	char env_val[TL_MAX_ARM_ENV][TL_VAL_LEN];
	int nroute;
	char route_arm[TL_MAX_ARMS][TL_ARM_LEN];
	char route[TL_MAX_ARMS][TL_VAL_LEN];
	size_t max_record;
	int private_off;
	char private_dir[TL_PATH_LEN];
};

/* printf-like, as slurm_error(). */
typedef void (*tl_log_fn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse plugstack arguments into `o` (defaults first); bad ones are logged and ignored. */
void tl_parse_options(int ac, char **av, struct tl_options *o, tl_log_fn log);

/* The job's arm ("" outside a trial) and its cache route (NULL when none). */
void tl_job_arm(const struct tl_options *o, unsigned int job_id, char *arm, size_t len);
const char *tl_job_route(const struct tl_options *o, const char *arm);

/*
 * The i-th arm variable when it belongs to `arm`: its name and value in *var and *val.
 * Returns 1 when it applies, 0 when not.
 */
int tl_arm_env(const struct tl_options *o, int i, const char *arm, const char **var, const char **val);

#endif
