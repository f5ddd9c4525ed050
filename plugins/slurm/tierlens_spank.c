/*
 * tierlens_spank.c - tag every Slurm job step with the storage under its scratch
 * directory and its A/B arm.
 *
 * plugstack.conf:
 *   optional /usr/lib/x86_64-linux-gnu/slurm/tierlens_spank.so key=value ...
 *
 *   scratch=PATH        directory to inspect [default: the job's TMPDIR, else /tmp]
 *   spool=DIR           where step records go [default: /var/spool/tierlens]
 *   cluster=NAME        cluster name in the job identity [default: SLURM_CLUSTER_NAME]
 *   arm=A               fixed arm for every job on this node
 *   arm=hash:A,B        arm chosen by FNV-1a(job id) modulo the number of arms
 *   arm_env=ARM:VAR=VAL set VAR=VAL in jobs of ARM (repeatable; overrides the user's VAR)
 *   arm_route=ARM:ROUTE cache route recorded for ARM, e.g. B:cache:xcache01:1094
 *   max_record=BYTES    upper bound of one spool record [default 16384, 1024..65536]
 *   private_tmp=auto|off|DIR
 *                       where Slurm's namespace configuration is (namespace.yaml or
 *                       job_container.conf), to find the storage behind the job's private /tmp
 *                       [auto: the directory of $SLURM_CONF, else /etc/slurm]
 *
 * In every job step (remote context, slurmstepd):
 *   user_init      TIERLENS_STORAGE_TYPE, TIERLENS_DEVICE_MODELS, TIERLENS_AB_ARM,
 *                  TIERLENS_CACHE_ROUTE, XRD_MONINFO (appended to the user's value),
 *                  the arm's variables
 *   task_init      (in each task) the identity with the run's SLUID where Slurm 26.05+ put
 *                  SLURM_JOB_SLUID in the task's environment but not yet in the step's
 *   task_post_fork remembers task pids
 *   exit           writes <spool>/<job>.<step>.<node>.json, one JSON line
 *
 * The plugin never fails or delays a job: each callback returns ESPANK_SUCCESS,
 * errors are logged with slurm_error() and the job goes on. No memory is allocated.
 */
#define _GNU_SOURCE
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/detect.h"
#include "lib/identity.h"
#include "lib/options.h"
#include "lib/private.h"
#include "lib/spool.h"

SPANK_PLUGIN(tierlens, 1);

#define MAX_PIDS      256
#define VAL_LEN       TL_VAL_LEN
#define ID_LEN        256
#define RECORD_MAX    TL_RECORD_MAX

static struct tl_options opt;

/* What this step learned; each slurmstepd serves one step, so statics are per step. */
static struct {
	int ready;
	uint32_t job_id, step_id, array_job_id, array_task_id;
	char step[32];
	char cluster[128];
	char node[256];
	char identity[ID_LEN];
	char sluid[TL_SLUID_LEN];
	char scratch[TL_PATH_LEN];
	char backing[TL_PATH_LEN];      /* what backs a private scratch, or "" */
	char arm[TL_ARM_LEN];
	const char *route;
	struct tl_storage st;
	double start;
	int npids, pids_dropped;
	pid_t pids[MAX_PIDS];
} step;

static char record[RECORD_MAX];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void parse_options(int ac, char **av)
{
	tl_parse_options(ac, av, &opt, slurm_error);
}

static void step_name(uint32_t id, char *buf, size_t len)
{
	if (id == SLURM_BATCH_SCRIPT)
		snprintf(buf, len, "batch");
	else if (id == SLURM_EXTERN_CONT)
		snprintf(buf, len, "extern");
	else if (id == SLURM_INTERACTIVE_STEP)
		snprintf(buf, len, "interactive");
	else
		snprintf(buf, len, "%u", id);
}

static void set_env(spank_t sp, const char *var, const char *val)
{
	spank_err_t rc = spank_setenv(sp, var, val, 1);
	if (rc != ESPANK_SUCCESS)
		slurm_error("tierlens: cannot set %s in the job: %s", var, spank_strerror(rc));
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (!spank_remote(sp))
		return ESPANK_SUCCESS;
	memset(&step, 0, sizeof step);
	step.start = now();
	parse_options(ac, av);
	return ESPANK_SUCCESS;
}

/* Who and where: job id, step, cluster, node, identity. */
static int learn_step(spank_t sp)
{
	spank_err_t rc;
	char buf[TL_PATH_LEN];

	if ((rc = spank_get_item(sp, S_JOB_ID, &step.job_id)) != ESPANK_SUCCESS) {
		slurm_error("tierlens: no job id: %s", spank_strerror(rc));
		return -1;
	}
	if (spank_get_item(sp, S_JOB_STEPID, &step.step_id) != ESPANK_SUCCESS)
		step.step_id = SLURM_BATCH_SCRIPT;
	step_name(step.step_id, step.step, sizeof step.step);
	if (spank_get_item(sp, S_JOB_ARRAY_ID, &step.array_job_id) != ESPANK_SUCCESS)
		step.array_job_id = 0;
	if (spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &step.array_task_id) != ESPANK_SUCCESS)
		step.array_task_id = 0;
	/* a job outside an array: Slurm gives its own id as the array id and NO_VAL as the task */
	if (step.array_task_id == NO_VAL || step.array_task_id == INFINITE)
		step.array_job_id = 0;

	if (opt.cluster[0])
		snprintf(step.cluster, sizeof step.cluster, "%s", opt.cluster);
	else if (spank_getenv(sp, "SLURM_CLUSTER_NAME", buf, sizeof buf) == ESPANK_SUCCESS && buf[0])
		snprintf(step.cluster, sizeof step.cluster, "%s", buf);
	else {
		slurm_error("tierlens: job %u: SLURM_CLUSTER_NAME not set and no cluster= option; "
			    "using 'unknown'", step.job_id);
		snprintf(step.cluster, sizeof step.cluster, "unknown");
	}
	if (gethostname(step.node, sizeof step.node) < 0)
		snprintf(step.node, sizeof step.node, "unknown");
	step.node[sizeof step.node - 1] = '\0';
	/* the run's SLUID (26.05+): an srun step inherits it from the batch script's environment */
	if (spank_getenv(sp, "SLURM_JOB_SLUID", buf, sizeof buf) == ESPANK_SUCCESS && tl_valid_sluid(buf))
		snprintf(step.sluid, sizeof step.sluid, "%s", buf);
	/* same as records.job_identity('slurm', cluster, job_id, sluid) */
	if (tl_identity(step.cluster, step.job_id, step.sluid, step.identity, sizeof step.identity) < 0) {
		slurm_error("tierlens: job %u: cluster name too long for the identity", step.job_id);
		snprintf(step.cluster, sizeof step.cluster, "unknown");
		tl_identity(step.cluster, step.job_id, step.sluid, step.identity, sizeof step.identity);
	}

	if (opt.scratch[0])
		snprintf(step.scratch, sizeof step.scratch, "%s", opt.scratch);
	else if (spank_getenv(sp, "TMPDIR", buf, sizeof buf) == ESPANK_SUCCESS && buf[0] == '/')
		snprintf(step.scratch, sizeof step.scratch, "%s", buf);
	else
		snprintf(step.scratch, sizeof step.scratch, "/tmp");

	tl_job_arm(&opt, step.job_id, step.arm, sizeof step.arm);
	step.route = tl_job_route(&opt, step.arm);
	return 0;
}

/* The namespace configuration's directory: the option, else that of $SLURM_CONF, else /etc/slurm. */
static void conf_dir(char *dir, size_t len)
{
	const char *conf = getenv("SLURM_CONF"), *slash;

	if (opt.private_dir[0])
		snprintf(dir, len, "%s", opt.private_dir);
	else if (conf && conf[0] == '/' && (slash = strrchr(conf, '/')) && slash != conf)
		snprintf(dir, len, "%.*s", (int) (slash - conf), conf);
	else
		snprintf(dir, len, "/etc/slurm");
}

/*
 * The storage under the job's scratch. A private /tmp (job_container/tmpfs, namespace/tmpfs or linux) is the
 * storage that backs it, which a hook outside the job's namespace cannot see in its mount table.
 */
static void detect_scratch(void)
{
	static struct tl_private priv;
	char dir[TL_PATH_LEN], err[TL_ERR_LEN] = "";
	int kind = 0;

	step.backing[0] = '\0';
	if (!opt.private_off) {
		conf_dir(dir, sizeof dir);
		if (tl_private_load(dir, "/", &priv, err, sizeof err) < 0)
			slurm_info("tierlens: job %u: %s; taking %s as it is", step.job_id, err, step.scratch);
		else
			kind = tl_private_backing(&priv, "/", step.scratch, step.job_id, step.node,
						  step.backing, sizeof step.backing);
	}
	if (kind == 1) {
		memset(&step.st, 0, sizeof step.st);
		snprintf(step.st.type, sizeof step.st.type, "tmpfs");
		snprintf(step.backing, sizeof step.backing, "tmpfs");
		return;
	}
	if (kind != 2)
		step.backing[0] = '\0';
	if (tl_detect(kind == 2 ? step.backing : step.scratch, "/", &step.st) < 0)
		slurm_info("tierlens: job %u: storage of %s%s%s is '%s': %s", step.job_id, step.scratch,
			   kind == 2 ? " backed by " : "", step.backing, step.st.type, step.st.err);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	char existing[VAL_LEN], val[VAL_LEN + ID_LEN], models[TL_MAX_MODELS * TL_MODEL_LEN];
	int i;

	(void) ac;
	(void) av;
	if (!spank_remote(sp) || learn_step(sp) < 0)
		return ESPANK_SUCCESS;

	detect_scratch();
	step.ready = 1;

	set_env(sp, "TIERLENS_STORAGE_TYPE", step.st.type);
	models[0] = '\0';
	for (i = 0; i < step.st.nmodels; i++) {
		strncat(models, i ? "," : "", sizeof models - strlen(models) - 1);
		strncat(models, step.st.models[i], sizeof models - strlen(models) - 1);
	}
	set_env(sp, "TIERLENS_DEVICE_MODELS", models);
	set_env(sp, "TIERLENS_SCRATCH", step.scratch);
	set_env(sp, "TIERLENS_JOB_IDENTITY", step.identity);
	if (step.arm[0])
		set_env(sp, "TIERLENS_AB_ARM", step.arm);
	if (step.route)
		set_env(sp, "TIERLENS_CACHE_ROUTE", step.route);

	if (spank_getenv(sp, "XRD_MONINFO", existing, sizeof existing) != ESPANK_SUCCESS)
		existing[0] = '\0';
	if (tl_moninfo(existing, step.identity, val, sizeof val) < 0)
		slurm_error("tierlens: job %u: XRD_MONINFO too long; left as the user set it", step.job_id);
	else
		set_env(sp, "XRD_MONINFO", val);

	for (i = 0; i < opt.nenv; i++) {
		const char *var, *v;
		if (tl_arm_env(&opt, i, step.arm, &var, &v))
			set_env(sp, var, v);
	}
	return ESPANK_SUCCESS;
}

/*
 * In the task, where slurmstepd has just built the task's environment: a batch step's own
 * environment has no SLURM_JOB_SLUID at user_init, its task's does. The identity given in
 * user_init is swapped for the one with the SLUID, in XRD_MONINFO too.
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char buf[64], sluid_id[ID_LEN], existing[VAL_LEN], val[VAL_LEN + ID_LEN];

	(void) ac;
	(void) av;
	if (!spank_remote(sp) || !step.ready || step.sluid[0])
		return ESPANK_SUCCESS;
	if (spank_getenv(sp, "SLURM_JOB_SLUID", buf, sizeof buf) != ESPANK_SUCCESS || !tl_valid_sluid(buf))
		return ESPANK_SUCCESS;
	if (tl_identity(step.cluster, step.job_id, buf, sluid_id, sizeof sluid_id) < 0)
		return ESPANK_SUCCESS;
	set_env(sp, "TIERLENS_JOB_IDENTITY", sluid_id);
	if (spank_getenv(sp, "XRD_MONINFO", existing, sizeof existing) != ESPANK_SUCCESS)
		existing[0] = '\0';
	if (tl_moninfo_swap(existing, step.identity, sluid_id, val, sizeof val) == 0)
		set_env(sp, "XRD_MONINFO", val);
	return ESPANK_SUCCESS;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	pid_t pid;

	(void) ac;
	(void) av;
	if (!spank_remote(sp) || !step.ready)
		return ESPANK_SUCCESS;
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return ESPANK_SUCCESS;
	if (step.npids < MAX_PIDS)
		step.pids[step.npids++] = pid;
	else
		step.pids_dropped++;
	return ESPANK_SUCCESS;
}

static void build_record(struct tl_json *j, double end, int with_lists)
{
	char num[64];
	int i;

	tl_json_init(j, record, opt.max_record);
	tl_json_raw(j, "{");
	tl_json_key(j, "v", 1);                 tl_json_raw(j, "1");
	tl_json_key(j, "tagger", 0);            tl_json_str(j, "slurm-spank");
	tl_json_key(j, "cluster", 0);           tl_json_str(j, step.cluster);
	snprintf(num, sizeof num, "%u", step.job_id);
	tl_json_key(j, "job_id", 0);            tl_json_str(j, num);
	tl_json_key(j, "step_id", 0);           tl_json_str(j, step.step);
	if (step.array_job_id) {
		snprintf(num, sizeof num, "%u", step.array_job_id);
		tl_json_key(j, "array_job_id", 0);  tl_json_str(j, num);
		snprintf(num, sizeof num, "%u", step.array_task_id);
		tl_json_key(j, "array_task_id", 0); tl_json_str(j, num);
	}
	tl_json_key(j, "node", 0);              tl_json_str(j, step.node);
	tl_json_key(j, "job_identity", 0);      tl_json_str(j, step.identity);
	tl_json_key(j, "storage_type", 0);      tl_json_str(j, step.st.type);
	tl_json_key(j, "scratch_path", 0);      tl_json_str(j, step.scratch);
	tl_json_key(j, "scratch_backing", 0);   tl_json_str(j, step.backing[0] ? step.backing : NULL);
	tl_json_key(j, "sluid", 0);             tl_json_str(j, step.sluid[0] ? step.sluid : NULL);
	tl_json_key(j, "ab_arm", 0);            tl_json_str(j, step.arm[0] ? step.arm : NULL);
	tl_json_key(j, "cache_route", 0);       tl_json_str(j, step.route);
	snprintf(num, sizeof num, "%.6f", step.start);
	tl_json_key(j, "start_time", 0);        tl_json_raw(j, num);
	snprintf(num, sizeof num, "%.6f", end);
	tl_json_key(j, "end_time", 0);          tl_json_raw(j, num);
	tl_json_key(j, "detect_error", 0);      tl_json_str(j, step.st.err[0] ? step.st.err : NULL);
	tl_json_key(j, "truncated", 0);         tl_json_raw(j, with_lists ? "false" : "true");
	tl_json_key(j, "device_models", 0);     tl_json_raw(j, "[");
	for (i = 0; with_lists && i < step.st.nmodels; i++) {
		if (i)
			tl_json_raw(j, ",");
		tl_json_str(j, step.st.models[i]);
	}
	tl_json_raw(j, "]");
	tl_json_key(j, "task_pids", 0);         tl_json_raw(j, "[");
	for (i = 0; with_lists && i < step.npids; i++) {
		snprintf(num, sizeof num, "%s%ld", i ? "," : "", (long) step.pids[i]);
		tl_json_raw(j, num);
	}
	tl_json_raw(j, "]}\n");
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	struct tl_json j;
	char name[512], err[TL_ERR_LEN];
	double end;

	(void) ac;
	(void) av;
	if (!spank_remote(sp) || !step.ready)
		return ESPANK_SUCCESS;
	end = now();
	build_record(&j, end, 1);
	if (j.overflow || step.pids_dropped) {
		slurm_error("tierlens: job %u step %s: record over %zu bytes or over %d tasks; "
			    "writing it without device models and pids", step.job_id, step.step,
			    opt.max_record, MAX_PIDS);
		build_record(&j, end, 0);
	}
	if (j.overflow) {
		slurm_error("tierlens: job %u step %s: record does not fit in %zu bytes; not written",
			    step.job_id, step.step, opt.max_record);
		return ESPANK_SUCCESS;
	}
	snprintf(name, sizeof name, "%u.%s.%s.json", step.job_id, step.step, step.node);
	if (tl_spool_write(opt.spool, name, j.buf, j.len, err, sizeof err) < 0)
		slurm_error("tierlens: job %u step %s: spool record not written: %s",
			    step.job_id, step.step, err);
	else
		slurm_verbose("tierlens: job %u step %s: %s/%s", step.job_id, step.step, opt.spool, name);
	return ESPANK_SUCCESS;
}
