/*
 * tl_test - C test driver for lib/ (detect, identity, spool), run under valgrind by
 * tests/test_slurm_plugin.py.
 *
 *   tl_test detect ROOT SCRATCH   print {"storage_type":...,"device_models":[...],"error":...}
 *   tl_test arm N ID...           print the hashed arm index (0..N-1) of each job id
 *   tl_test identity CLUSTER JOB [SLUID]
 *                                 print the job identity the plugin gives
 *   tl_test private ROOT CONFDIR SCRATCH JOB NODE
 *                                 print {"kind":0|1|2,"backing":...,"storage_type":...,...}: the
 *                                 storage of a private /tmp as the plugin decides it
 *   tl_test unit                  unit tests of arm hashing, XRD_MONINFO, JSON and the spool;
 *                                 exit 0 when all pass
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/detect.h"
#include "lib/identity.h"
#include "lib/options.h"
#include "lib/private.h"
#include "lib/spool.h"

static int failures;

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

/* Ends the JSON object both commands print with the storage they found and prints it: the
 * Python tests read the same three keys from either. */
static int put_storage(struct tl_json *j, const struct tl_storage *st, const char *err)
{
	int i;

	tl_json_key(j, "device_models", 0);
	tl_json_raw(j, "[");
	for (i = 0; i < st->nmodels; i++) {
		if (i)
			tl_json_raw(j, ",");
		tl_json_str(j, st->models[i]);
	}
	tl_json_raw(j, "]");
	tl_json_key(j, "error", 0);
	tl_json_str(j, err[0] ? err : NULL);
	tl_json_raw(j, "}");
	if (j->overflow)
		return 2;
	puts(j->buf);
	return 0;
}

static int detect(const char *root, const char *scratch)
{
	struct tl_storage st;
	char buf[8192];
	struct tl_json j;

	tl_detect(scratch, root, &st);
	tl_json_init(&j, buf, sizeof buf);
	tl_json_raw(&j, "{");
	tl_json_key(&j, "storage_type", 1);
	tl_json_str(&j, st.type);
	return put_storage(&j, &st, st.err);
}

static void test_moninfo(void)
{
	char out[64];
	CHECK(tl_moninfo(NULL, "slurm.c.1", out, sizeof out) == 0 && !strcmp(out, "slurm.c.1"));
	CHECK(tl_moninfo("", "slurm.c.1", out, sizeof out) == 0 && !strcmp(out, "slurm.c.1"));
	CHECK(tl_moninfo("mine", "slurm.c.1", out, sizeof out) == 0 && !strcmp(out, "mine,slurm.c.1"));
	CHECK(tl_moninfo("slurm.c.1", "slurm.c.1", out, sizeof out) == 0 && !strcmp(out, "slurm.c.1"));
	CHECK(tl_moninfo("mine,slurm.c.1", "slurm.c.1", out, sizeof out) == 0 && !strcmp(out, "mine,slurm.c.1"));
	CHECK(tl_moninfo("xslurm.c.1", "slurm.c.1", out, sizeof out) == 0 && !strcmp(out, "xslurm.c.1,slurm.c.1"));
	CHECK(tl_moninfo("0123456789012345678901234567890123456789012345678901234567890", "slurm.c.1",
			 out, sizeof out) == -1);
}

static void test_identity(void)
{
	char out[128];

	CHECK(tl_valid_sluid("s0J4V2M8ZB3Q1K"));
	CHECK(!tl_valid_sluid("s00300000000G4"));       /* cluster 0: a db_index, not a run */
	CHECK(tl_valid_sluid("s00400000000G4"));        /* cluster 1 */
	CHECK(!tl_valid_sluid("S0J4V2M8ZB3Q1K") && !tl_valid_sluid("s0j4v2m8zb3q1k"));
	CHECK(!tl_valid_sluid("s0J4V2M8ZB3QIK") && !tl_valid_sluid("sZJ4V2M8ZB3Q1K"));
	CHECK(!tl_valid_sluid("s0J4V2M8ZB3Q1") && !tl_valid_sluid("s0J4V2M8ZB3Q1KX"));
	CHECK(!tl_valid_sluid("") && !tl_valid_sluid(NULL));
	CHECK(tl_identity("c", 42, NULL, out, sizeof out) == 0 && !strcmp(out, "slurm.c.42"));
	CHECK(tl_identity("c", 42, "bogus", out, sizeof out) == 0 && !strcmp(out, "slurm.c.42"));
	CHECK(tl_identity("c", 42, "s0J4V2M8ZB3Q1K", out, sizeof out) == 0
	      && !strcmp(out, "slurm.c.42.s0J4V2M8ZB3Q1K"));
	CHECK(tl_identity("c", 42, "s0J4V2M8ZB3Q1K", out, 20) == -1);
	CHECK(tl_moninfo_swap("slurm.c.42", "slurm.c.42", "slurm.c.42.sX", out, sizeof out) == 0
	      && !strcmp(out, "slurm.c.42.sX"));
	CHECK(tl_moninfo_swap("mine,slurm.c.42", "slurm.c.42", "slurm.c.42.sX", out, sizeof out) == 0
	      && !strcmp(out, "mine,slurm.c.42.sX"));
	CHECK(tl_moninfo_swap("mine", "slurm.c.42", "slurm.c.42.sX", out, sizeof out) == 0
	      && !strcmp(out, "mine,slurm.c.42.sX"));
	CHECK(tl_moninfo_swap("", "slurm.c.42", "slurm.c.42.sX", out, sizeof out) == 0
	      && !strcmp(out, "slurm.c.42.sX"));
	CHECK(tl_moninfo_swap("xslurm.c.42", "slurm.c.42", "n", out, sizeof out) == 0
	      && !strcmp(out, "xslurm.c.42,n"));
	CHECK(tl_moninfo_swap("mine,slurm.c.42", "slurm.c.42", "slurm.c.42.sX", out, 10) == -1);
}

static void test_private_parse(void)
{
	struct tl_private p;
	static const char conf[] =
		"# job_container.conf\n"
		"AutoBasePath=true\n"
		"NodeName=wn[01-10] BasePath=/var/nvme/storage Dirs=/tmp,/var/tmp/ # nodes with NVMe\n"
		"basepath=\"/scratch/slurm\"\n";
	static const char yaml[] =
		"defaults:\n"
		"  auto_base_path: true\n"
		"  base_path: \"/var/nvme/storage_0\"   # all nodes\n"
		"node_confs:\n"
		"  - nodes:\n"
		"    - \"n[2-4,6]\"\n"
		"    options:\n"
		"      base_path: '/var/nvme/storage_1'\n"
		"      dir_confs:\n"
		"        - path: \"/tmp\"\n"
		"          options: \"noexec,nosuid,size=8g\"\n"
		"          tmpfs: true\n"
		"        -\n"
		"          path: /scratch/\n"
		"          base_path: \"/var/hdd/%h\"\n"
		"      shared: false\n"
		"      base_path: /late\n";

	memset(&p, 0, sizeof p);
	tl_private_parse_conf(conf, sizeof conf - 1, &p);
	CHECK(p.nbases == 2 && !strcmp(p.bases[0], "/var/nvme/storage") && !strcmp(p.bases[1], "/scratch/slurm"));
	CHECK(p.ndirs == 2 && !strcmp(p.dirs[0].path, "/tmp") && !strcmp(p.dirs[1].path, "/var/tmp"));
	CHECK(!p.dirs[0].tmpfs && !p.dirs[1].tmpfs);

	memset(&p, 0, sizeof p);
	tl_private_parse_conf("BasePath=/b\n", strlen("BasePath=/b\n"), &p);           /* Dirs defaults to /tmp,/dev/shm */
	CHECK(p.ndirs == 2 && !strcmp(p.dirs[1].path, "/dev/shm") && p.dirs[1].tmpfs && !p.dirs[0].tmpfs);

	memset(&p, 0, sizeof p);
	tl_private_parse_yaml(yaml, sizeof yaml - 1, &p);
	CHECK(p.nbases == 3 && !strcmp(p.bases[0], "/var/nvme/storage_0")
	      && !strcmp(p.bases[1], "/var/nvme/storage_1") && !strcmp(p.bases[2], "/late"));
	CHECK(p.ndirs == 2 && !strcmp(p.dirs[0].path, "/tmp") && p.dirs[0].tmpfs && !p.dirs[0].base[0]);
	CHECK(!strcmp(p.dirs[1].path, "/scratch") && !p.dirs[1].tmpfs && !strcmp(p.dirs[1].base, "/var/hdd/%h"));

	memset(&p, 0, sizeof p);
	{
		const char *y = "defaults:\n  base_path: /b\n  dirs: \"/tmp, /local\"\n";
		tl_private_parse_yaml(y, strlen(y), &p);
	}
	CHECK(p.nbases == 1 && p.ndirs == 2 && !strcmp(p.dirs[1].path, "/local"));
	memset(&p, 0, sizeof p);
	tl_private_parse_yaml("nothing: here\n", 14, &p);
	CHECK(p.nbases == 0 && p.ndirs == 0);
}

static int private_cmd(const char *root, const char *confdir, const char *scratch, const char *job,
		       const char *node)
{
	static struct tl_private p;
	struct tl_storage st;
	char backing[TL_PATH_LEN] = "", err[TL_ERR_LEN] = "", buf[8192];
	struct tl_json j;
	int kind = 0;

	if (tl_private_load(confdir, root, &p, err, sizeof err) >= 0)
		kind = tl_private_backing(&p, root, scratch, (unsigned int) strtoul(job, NULL, 10), node,
					  backing, sizeof backing);
	if (kind == 1) {
		memset(&st, 0, sizeof st);
		snprintf(st.type, sizeof st.type, "tmpfs");
	} else {
		tl_detect(kind == 2 ? backing : scratch, root, &st);
	}
	tl_json_init(&j, buf, sizeof buf);
	tl_json_raw(&j, "{");
	tl_json_key(&j, "kind", 1);
	tl_json_raw(&j, kind == 2 ? "2" : kind == 1 ? "1" : "0");
	tl_json_key(&j, "backing", 0);
	tl_json_str(&j, kind == 2 ? backing : NULL);
	tl_json_key(&j, "storage_type", 0);
	tl_json_str(&j, st.type);
	return put_storage(&j, &st, err);
}

static void no_log(const char *fmt, ...)
{
	(void) fmt;
}

static void test_options(void)
{
	static struct tl_options o;
	static char longvar[1200], longval[1200];
	char *av[8];
	const char *var, *val;
	char arm[TL_ARM_LEN];

	av[0] = "arm=A";
	av[1] = "arm_env=A:XRD_CACHE=on";
	av[2] = "arm_env=B:OTHER=1";
	av[3] = "arm_route=A:cache:xcache01:1094";
	av[4] = "max_record=2048";
	av[5] = "private_tmp=off";
	tl_parse_options(6, av, &o, no_log);
	tl_job_arm(&o, 42, arm, sizeof arm);
	CHECK(!strcmp(arm, "A") && o.nenv == 2 && o.max_record == 2048 && o.private_off);
	CHECK(tl_arm_env(&o, 0, arm, &var, &val) == 1 && !strcmp(var, "XRD_CACHE") && !strcmp(val, "on"));
	CHECK(tl_arm_env(&o, 1, arm, &var, &val) == 0);
	CHECK(!strcmp(tl_job_route(&o, arm), "cache:xcache01:1094"));
	/* regression (fuzz/regressions/fuzz_options/arm_env_long_name): a name of over 1023
	 * characters once lost its '=' when stored, and the job's setup wrote through NULL */
	memset(longvar, 'V', sizeof longvar - 1);
	memcpy(longvar, "arm_env=A:", 10);
	memcpy(longvar + sizeof longvar - 3, "=1", 3);
	memset(longval, 'x', sizeof longval - 1);
	memcpy(longval, "arm_env=A:V=", 12);
	av[1] = longvar;
	av[2] = longval;
	tl_parse_options(3, av, &o, no_log);
	CHECK(o.nenv == 0);
}

static void test_hash(void)
{
	/* FNV-1a 32 reference values; the Python side (arm_for_job) must agree. */
	CHECK(tl_fnv1a32("") == 2166136261u);
	CHECK(tl_fnv1a32("a") == 0xe40c292cu);
	CHECK(tl_fnv1a32("foobar") == 0xbf9cf968u);
}

static void test_json(void)
{
	char buf[32];
	struct tl_json j;

	tl_json_init(&j, buf, sizeof buf);
	tl_json_str(&j, "a\"b\\c\n\x01");
	CHECK(!j.overflow && !strcmp(buf, "\"a\\\"b\\\\c\\u000a\\u0001\""));
	tl_json_init(&j, buf, 8);
	tl_json_str(&j, "0123456789");
	CHECK(j.overflow && strlen(buf) < 8);
	tl_json_init(&j, buf, sizeof buf);
	tl_json_str(&j, NULL);
	CHECK(!strcmp(buf, "null"));
}

static void test_spool(void)
{
	char dir[] = "/tmp/tl_test.XXXXXX", sub[256], link[256], file[512], err[TL_ERR_LEN], got[64];
	int fd;
	ssize_t n;
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sub, sizeof sub, "%s/spool", dir);
	/* created when missing, 0755, record in place, no temporary left */
	CHECK(tl_spool_write(sub, "1.0.n.json", "{}\n", 3, err, sizeof err) == 0);
	snprintf(file, sizeof file, "%s/1.0.n.json", sub);
	fd = open(file, O_RDONLY);
	CHECK(fd >= 0);
	n = fd >= 0 ? read(fd, got, sizeof got) : -1;
	CHECK(n == 3 && !memcmp(got, "{}\n", 3));
	if (fd >= 0)
		close(fd);
	CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0755);
	/* rewritten atomically */
	CHECK(tl_spool_write(sub, "1.0.n.json", "[]\n", 3, err, sizeof err) == 0);
	/* a symlinked spool directory is refused */
	snprintf(link, sizeof link, "%s/link", dir);
	CHECK(symlink(sub, link) == 0);
	CHECK(tl_spool_write(link, "2.0.n.json", "{}\n", 3, err, sizeof err) == -1 && err[0]);
	/* a world-writable spool directory is refused */
	CHECK(chmod(sub, 0777) == 0);
	CHECK(tl_spool_write(sub, "3.0.n.json", "{}\n", 3, err, sizeof err) == -1 && strstr(err, "writable"));
	CHECK(chmod(sub, 0755) == 0);
	/* names cannot leave the directory */
	CHECK(tl_spool_write(sub, "../x.json", "{}\n", 3, err, sizeof err) == -1);
	CHECK(tl_spool_write(sub, ".hidden", "{}\n", 3, err, sizeof err) == -1);
	/* a missing parent gives an error, not a crash */
	CHECK(tl_spool_write("/nonexistent/tl/spool", "4.json", "{}\n", 3, err, sizeof err) == -1);

	unlink(file);
	unlink(link);
	rmdir(sub);
	rmdir(dir);
}

static void test_detect_robust(void)
{
	struct tl_storage st;
	/* nothing under the root at all: 'other' with a reason */
	CHECK(tl_detect("/scratch", "/nonexistent-root", &st) == -1);
	CHECK(!strcmp(st.type, "other") && st.err[0]);
	/* NULL / empty scratch defaults to /tmp and never crashes */
	tl_detect(NULL, "/nonexistent-root", &st);
	CHECK(!strcmp(st.type, "other"));
	/* the live system gives some known answer */
	tl_detect("/tmp", "/", &st);
	CHECK(st.type[0] != '\0');
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "detect"))
		return detect(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "arm")) {
		unsigned int n = (unsigned int) strtoul(argv[2], NULL, 10);
		for (int i = 3; i < argc && n > 0; i++)
			printf("%u\n", tl_fnv1a32(argv[i]) % n);
		return n > 0 ? 0 : 2;
	}
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "identity")) {
		char out[512];
		if (tl_identity(argv[2], (unsigned int) strtoul(argv[3], NULL, 10), argc == 5 ? argv[4] : NULL,
				out, sizeof out) < 0)
			return 2;
		puts(out);
		return 0;
	}
	if (argc == 7 && !strcmp(argv[1], "private"))
		return private_cmd(argv[2], argv[3], argv[4], argv[5], argv[6]);
	if (argc == 2 && !strcmp(argv[1], "unit")) {
		test_moninfo();
		test_identity();
		test_options();
		test_private_parse();
		test_hash();
		test_json();
		test_spool();
		test_detect_robust();
		if (failures)
			fprintf(stderr, "%d check(s) failed\n", failures);
		else
			printf("all unit checks passed\n");
		return failures ? 1 : 0;
	}
	fprintf(stderr, "usage: %s detect ROOT SCRATCH | unit\n", argv[0]);
	return 2;
}
