/* Paced UDP sender for bench/collector_bench.py: sends XRootD f-stream packets from N sockets at
 * a fixed rate with sendmmsg, so that generating 100 k packets/s costs little CPU beside the
 * collector on a 2-core machine.
 *
 * Input file (written by the bench, little-endian u32 fields):
 *   nsock; per socket: len + ident packet, len + login packet, len + f-stream template,
 *   then the template's offsets of: the pseq byte (always 1), the open's file id, the close's file
 *   id, the 12 lfn digits.
 * Per packet k (socket k % nsock): pseq = k / nsock, file id = k + 1, lfn digits = k + 1.
 * Prints "<datagrams sent> <seconds>".
 *
 *   cc -O2 -o udp_sender udp_sender.c && ./udp_sender TEMPLATES PORT RATE SECONDS
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXS 64
#define BURST 256

static uint32_t rd32(FILE *f) {
    uint32_t v;
    if (fread(&v, 4, 1, f) != 1) { fprintf(stderr, "short template file\n"); exit(2); }
    return v;
}

static unsigned char *rdbuf(FILE *f, uint32_t *n) {
    *n = rd32(f);
    unsigned char *b = malloc(*n);
    if (!b || fread(b, 1, *n, f) != *n) { fprintf(stderr, "short template file\n"); exit(2); }
    return b;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void put32be(unsigned char *p, uint32_t v) { v = htonl(v); memcpy(p, &v, 4); }

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: %s TEMPLATES PORT RATE SECONDS\n", argv[0]); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    int port = atoi(argv[2]);
    double rate = atof(argv[3]), seconds = atof(argv[4]);
    uint32_t ns = rd32(f);
    if (ns < 1 || ns > MAXS) { fprintf(stderr, "bad socket count\n"); return 2; }
    int fd[MAXS];
    uint32_t tlen[MAXS], ofo[MAXS], ofc[MAXS], olfn[MAXS];
    unsigned char *tpl[MAXS];
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(port)};
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    long sent = 0;
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t n1, n2;
        unsigned char *ident = rdbuf(f, &n1), *login = rdbuf(f, &n2);
        tpl[i] = rdbuf(f, &tlen[i]);
        rd32(f);
        ofo[i] = rd32(f); ofc[i] = rd32(f); olfn[i] = rd32(f);
        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&dst, sizeof dst) < 0) { perror("socket"); return 1; }
        send(fd[i], ident, n1, 0);
        send(fd[i], login, n2, 0);
        sent += 2;
    }
    usleep(500000);
    long total = (long)(rate * seconds);
    /* per socket: a ring of BURST packet buffers, filled then sent with one sendmmsg */
    static unsigned char buf[MAXS][BURST][2048];
    struct mmsghdr msg[BURST];
    struct iovec iov[BURST];
    long k = 0;
    double t0 = now(), tick = 0.001;
    while (k < total) {
        long due = (long)((now() - t0) * rate) + (long)(rate * tick);
        if (due > total) due = total;
        while (k < due) {
            /* packets k .. kend-1: packet j goes out on socket j % ns (its own pseq order) */
            long kend = due < k + (long)ns * BURST ? due : k + (long)ns * BURST;
            for (uint32_t s = 0; s < ns; s++) {
                int m = 0;
                for (long j = k + (long)((s + ns - (uint32_t)(k % ns)) % ns); j < kend; j += ns) {
                    unsigned char *p = buf[s][m];
                    memcpy(p, tpl[s], tlen[s]);
                    p[1] = (unsigned char)((j / ns) & 0xFF);
                    put32be(p + ofo[s], (uint32_t)(j + 1));
                    put32be(p + ofc[s], (uint32_t)(j + 1));
                    char digits[24];
                    snprintf(digits, sizeof digits, "%012ld", j + 1);
                    memcpy(p + olfn[s], digits, 12);
                    iov[m].iov_base = p;
                    iov[m].iov_len = tlen[s];
                    memset(&msg[m], 0, sizeof msg[m]);
                    msg[m].msg_hdr.msg_iov = &iov[m];
                    msg[m].msg_hdr.msg_iovlen = 1;
                    m++;
                }
                int off = 0;
                while (off < m) {
                    int r = sendmmsg(fd[s], msg + off, m - off, 0);
                    if (r < 0) { perror("sendmmsg"); return 1; }
                    off += r;
                }
                sent += m;
            }
            k = kend;
        }
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    printf("%ld %.3f\n", sent, now() - t0);
    return 0;
}
