/*
 * fuzz_options - the plugstack.conf arguments (lib/options.c) and what the plugin derives from
 * them for a job: arm, route, arm variables; the identity and XRD_MONINFO (lib/identity.c) from
 * SLURM_JOB_SLUID and XRD_MONINFO values; the spool record's JSON strings (lib/spool.c).
 * Input: arguments separated by newlines; the first four bytes also give the job id.
 */
#include "fuzz_common.h"

#include "../lib/identity.h"
#include "../lib/options.h"
#include "../lib/spool.h"

#define MAX_ARGS 64

static struct tl_options opt;
static char text[1 << 17], record[TL_RECORD_MAX];

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *av[MAX_ARGS], arm[TL_ARM_LEN], id[512], mon[2048];
	const char *var, *val;
	unsigned int job = 0;
	int ac = 0;
	struct tl_json j;

	if (size >= sizeof text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (size_t i = 0; i < 4 && i < size; i++)
		job = job << 8 | data[i];
	for (char *p = text, *nl; p && ac < MAX_ARGS; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		av[ac++] = p;
	}
	tl_parse_options(ac, av, &opt, fuzz_log);
	tl_job_arm(&opt, job, arm, sizeof arm);
	tl_job_route(&opt, arm);
	for (int i = 0; i < opt.nenv; i++) {
		if (tl_arm_env(&opt, i, arm, &var, &val))
			fuzz_log("%s=%s", var, val);
		if (tl_arm_env(&opt, i, opt.env_arm[i], &var, &val))
			fuzz_log("%s=%s", var, val);
	}
	tl_json_init(&j, record, opt.max_record);
	for (int i = 0; i < ac; i++) {
		/* each argument as a SLURM_JOB_SLUID and as a user's XRD_MONINFO */
		tl_valid_sluid(av[i]);
		if (tl_identity(opt.cluster, job, av[i], id, sizeof id) == 0) {
			tl_moninfo(av[i], id, mon, sizeof mon);
			tl_moninfo_swap(av[i], id, "slurm.c.1.s0J4V2M8ZB3Q1K", mon, sizeof mon);
			tl_moninfo_swap(mon, av[i], id, mon + 1024, sizeof mon - 1024);
		}
		tl_json_key(&j, av[i], i == 0);
		tl_json_str(&j, av[i]);
	}
	return 0;
}
