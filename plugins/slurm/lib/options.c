/* options.c - plugstack arguments (see options.h). */
#define _GNU_SOURCE
#include "options.h"
#include "identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void split_arm(const char *val, char *arm, const char **rest)
{
	const char *colon = strchr(val, ':');
	size_t n = colon ? (size_t) (colon - val) : 0;
	arm[0] = '\0';
	*rest = NULL;
	if (!colon || n == 0 || n >= TL_ARM_LEN)
		return;
	memcpy(arm, val, n);
	arm[n] = '\0';
	*rest = colon + 1;
}

static void parse_arms(struct tl_options *o, const char *val, tl_log_fn log)
{
	char buf[TL_VAL_LEN], *tok, *save = NULL;

	o->narms = 0;
	o->hashed = !strncmp(val, "hash:", 5);
	snprintf(buf, sizeof buf, "%s", o->hashed ? val + 5 : val);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->narms == TL_MAX_ARMS || strlen(tok) >= TL_ARM_LEN) {
			log("tierlens: arm list '%s': at most %d arms of %d characters",
			    val, TL_MAX_ARMS, TL_ARM_LEN - 1);
			break;
		}
		snprintf(o->arms[o->narms++], TL_ARM_LEN, "%s", tok);
	}
	if (!o->hashed && o->narms > 1) {
		log("tierlens: arm=%s: several arms need 'hash:'; using %s for every job", val, o->arms[0]);
		o->narms = 1;
	}
}

void tl_parse_options(int ac, char **av, struct tl_options *o, tl_log_fn log)
{
	int i;

	memset(o, 0, sizeof *o);
	snprintf(o->spool, sizeof o->spool, "/var/spool/tierlens");
	o->max_record = 16384;
	for (i = 0; i < ac; i++) {
		const char *a = av[i], *eq = strchr(a, '='), *v, *rest;
		char arm[TL_ARM_LEN];

		if (!eq) {
			log("tierlens: ignoring plugstack argument '%s' (want key=value)", a);
			continue;
		}
		v = eq + 1;
		if (!strncmp(a, "scratch=", 8)) {
			snprintf(o->scratch, sizeof o->scratch, "%s", v);
		} else if (!strncmp(a, "spool=", 6)) {
			snprintf(o->spool, sizeof o->spool, "%s", v);
		} else if (!strncmp(a, "cluster=", 8)) {
			snprintf(o->cluster, sizeof o->cluster, "%s", v);
		} else if (!strncmp(a, "arm=", 4)) {
			parse_arms(o, v, log);
		} else if (!strncmp(a, "arm_env=", 8)) {
			const char *veq;
			split_arm(v, arm, &rest);
			veq = rest ? strchr(rest, '=') : NULL;
			/* split here, each part checked against its own buffer: a cut value must never
			 * lose its '=' (the name and value are set in the job as they are stored) */
			if (!veq || veq == rest || (size_t) (veq - rest) >= TL_ARM_VAR_LEN
			    || strlen(veq + 1) >= TL_VAL_LEN || o->nenv == TL_MAX_ARM_ENV) {
				log("tierlens: ignoring '%.200s' (want arm_env=ARM:VAR=VALUE, at most %d, "
				    "VAR under %d and VALUE under %d characters)", a, TL_MAX_ARM_ENV,
				    TL_ARM_VAR_LEN, TL_VAL_LEN);
				continue;
			}
			snprintf(o->env_arm[o->nenv], TL_ARM_LEN, "%s", arm);
			snprintf(o->env_var[o->nenv], TL_ARM_VAR_LEN, "%.*s", (int) (veq - rest), rest);
			snprintf(o->env_val[o->nenv++], TL_VAL_LEN, "%s", veq + 1);
		} else if (!strncmp(a, "arm_route=", 10)) {
			split_arm(v, arm, &rest);
			if (!rest || !rest[0] || o->nroute == TL_MAX_ARMS) {
				log("tierlens: ignoring '%s' (want arm_route=ARM:ROUTE)", a);
				continue;
			}
			snprintf(o->route_arm[o->nroute], TL_ARM_LEN, "%s", arm);
			snprintf(o->route[o->nroute++], TL_VAL_LEN, "%s", rest);
		} else if (!strncmp(a, "private_tmp=", 12)) {
			if (!strcmp(v, "off"))
				o->private_off = 1;
			else if (v[0] == '/')
				snprintf(o->private_dir, sizeof o->private_dir, "%s", v);
			else if (strcmp(v, "auto"))
				log("tierlens: private_tmp=%s: want auto, off or a directory; using auto", v);
		} else if (!strncmp(a, "max_record=", 11)) {
			long n = strtol(v, NULL, 10);
			if (n < TL_RECORD_MIN || n > TL_RECORD_MAX)
				log("tierlens: max_record=%s out of %d..%d; keeping %zu",
				    v, TL_RECORD_MIN, TL_RECORD_MAX, o->max_record);
			else
				o->max_record = (size_t) n;
		} else {
			log("tierlens: ignoring unknown plugstack argument '%s'", a);
		}
	}
}

void tl_job_arm(const struct tl_options *o, unsigned int job_id, char *arm, size_t len)
{
	char id[32];

	arm[0] = '\0';
	if (o->narms <= 0)
		return;
	snprintf(id, sizeof id, "%u", job_id);
	snprintf(arm, len, "%s", o->arms[o->hashed ? tl_fnv1a32(id) % (unsigned) o->narms : 0]);
}

const char *tl_job_route(const struct tl_options *o, const char *arm)
{
	for (int i = 0; i < o->nroute && arm[0]; i++)
		if (!strcmp(o->route_arm[i], arm))
			return o->route[i];
	return NULL;
}

int tl_arm_env(const struct tl_options *o, int i, const char *arm, const char **var, const char **val)
{
	if (i < 0 || i >= o->nenv || !arm[0] || strcmp(o->env_arm[i], arm))
		return 0;
	*var = o->env_var[i];
	*val = o->env_val[i];
	return 1;
}
