/*
 * bin/vpcnet-netlink: the agent's resident rtnetlink helper (src/dataplane/netlink/).
 *
 * Why: the Linux driver spawned `ip` (through nsenter) and `nft` for every pod operation, each a
 * fork of the whole agent costing milliseconds. This process is started once; the agent writes
 * requests to its stdin and reads answers, one JSON line each, from its stdout. The wire format is
 * written down in src/dataplane/netlink/wire.ts.
 *
 * Namespaces: a small pool of worker threads. A worker takes one whole request, enters its
 * namespace with setns(CLONE_NEWNET) (only this thread moves), opens a rtnetlink socket there, runs
 * the operations, and returns to the helper's own namespace. A path that is not a network namespace
 * is refused before anything runs. If a worker cannot return, the helper exits at once: a thread
 * left in a pod's namespace must never run the next request (the agent restarts the helper).
 *
 * Link deletions: the kernel announces a deletion at once but acks it only after waiting for RCU
 * (link-del.c). A worker answers a `linkDel` at the announcement and goes on; a
 * detached "finisher" thread, which never changes namespace (its socket was made in the request's),
 * sends the request and waits for that ack (link-del.c). When stdin closes, the helper waits for
 * outstanding finishers before it exits.
 *
 * Files: main.c (reading requests, the worker pool), requests.c (what a worker does with one),
 * netns.c (entering a namespace and coming back), answer.c (the answers' lines), helper.h (what
 * they share), ops.c (one operation as rtnetlink, or for the SNAT set as nfnetlink: nft-set.c,
 * through the sockets of nfnl-socket.c), link-del.c (a link deletion answered at its
 * announcement), rtnl.c (the socket and message builder), dump*.c (reads in `ip -d -j` shape; a
 * pod's within the scope of read-scope.c and a bound, dump-scoped.c), jbuf.c (the answer's text).
 *
 * Usage: vpcnet-netlink [--node-netns PATH] [--no-strict-check]
 *   --node-netns: the node's namespace (default: the helper's own)
 *   --no-strict-check: reads as on a kernel before 4.20, whose dumps ignore filters (tests)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"
#include "helper.h"
#include "link-del.h"
#include "nfnl-socket.h"

/*
 * Workers mostly wait in the kernel, not on the CPU, and such waits overlap only across threads: with
 * 4 workers, when each still waited out its veth's deletion (now a finisher's, link-del.c), 50
 * concurrent removals took 4x as long as 50 `ip` processes. A burst's worth of workers lets
 * whatever waits remain (RTNL, the namespace's locks) overlap.
 */
#define WORKERS 32
/* Bounded use: message buffers of a few KiB; the receive buffer and answers are on the heap. */
#define WORKER_STACK (256 * 1024)
/* A sanity bound only (GC may remove a whole node's orphans in one run). */
#define MAX_OPS 1000000
/* A plan is a pod's side and the node's side; a few more leave room, never thousands. */
#define MAX_PARTS 16

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static struct request *queue_head, *queue_tail;
static bool input_done;

static void free_request(struct request *q) {
  for (int i = 0; i < q->nops; i++) free(q->ops[i]);
  for (int i = 0; i < q->nparts; i++) free_request(q->parts[i]);
  free(q->ops);
  free(q->parts);
  free(q->scope);
  free(q->path);
  free(q);
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&queue_lock);
    while (queue_head == NULL && !input_done) pthread_cond_wait(&queue_ready, &queue_lock);
    struct request *q = queue_head;
    if (q != NULL) {
      queue_head = q->next;
      if (queue_head == NULL) queue_tail = NULL;
    }
    pthread_mutex_unlock(&queue_lock);
    if (q == NULL) return NULL;
    if (q->kind == READ)
      read_request(q);
    else if (q->kind == NFT_SET)
      nft_set_request(q);
    else if (q->kind == PLAN)
      plan_request(q);
    else
      run_request(q);
    free_request(q);
  }
}

static void enqueue(struct request *q) {
  pthread_mutex_lock(&queue_lock);
  q->next = NULL;
  if (queue_tail != NULL)
    queue_tail->next = q;
  else
    queue_head = q;
  queue_tail = q;
  pthread_cond_signal(&queue_ready);
  pthread_mutex_unlock(&queue_lock);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

int unhex(const char *hex, size_t n, char *out) {
  if (n % 2 != 0) return -1;
  for (size_t i = 0; i < n / 2; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return -1;
    out[i] = (char)(hi * 16 + lo);
  }
  return 0;
}

/* "node", or "pod:<path as lower-case hex>". */
static int parse_target(const char *t, char **path) {
  *path = NULL;
  if (strcmp(t, "node") == 0) return 0;
  if (strncmp(t, "pod:", 4) != 0) return -1;
  const char *hex = t + 4;
  size_t n = strlen(hex);
  if (n == 0 || n % 2 != 0) return -1;
  char *p = malloc(n / 2 + 1);
  if (p == NULL) die("out of memory");
  if (unhex(hex, n, p) < 0) {
    free(p);
    return -1;
  }
  p[n / 2] = '\0';
  *path = p;
  return 0;
}

static void chomp(char *line) {
  size_t n = strlen(line);
  if (n > 0 && line[n - 1] == '\n') line[n - 1] = '\0';
}

/* Reads a run's `nops` operation lines. */
static void read_ops(struct request *q, int nops) {
  q->ops = calloc((size_t)nops + 1, sizeof *q->ops);
  if (q->ops == NULL) die("out of memory");
  for (int i = 0; i < nops; i++) {
    char *op = NULL;
    size_t opcap = 0;
    if (getline(&op, &opcap, stdin) < 0) die("input ended inside a request");
    chomp(op);
    q->ops[q->nops++] = op;
  }
}

static _Noreturn void refuse_line(const char *what, const char *line) {
  fprintf(stderr, "vpcnet-netlink: %s: %.200s\n", what, line);
  _exit(65);
}

/* A plan's `nparts` runs, each a line `part <nops> <target>` and its operation lines ('stop' mode). */
static void read_parts(struct request *q, int nparts) {
  q->parts = calloc((size_t)nparts + 1, sizeof *q->parts);
  if (q->parts == NULL) die("out of memory");
  char *line = NULL;
  size_t cap = 0;
  for (int i = 0; i < nparts; i++) {
    if (getline(&line, &cap, stdin) < 0) die("input ended inside a request");
    chomp(line);
    struct request *part = calloc(1, sizeof *part);
    if (part == NULL) die("out of memory");
    char target[8200];
    int nops;
    if (sscanf(line, "part %d %8199s", &nops, target) != 2 || nops < 0 || nops > MAX_OPS)
      refuse_line("cannot parse plan part", line);
    part->kind = RUN;
    part->id = q->id;
    q->parts[q->nparts++] = part;
    if (parse_target(target, &part->path) < 0) refuse_line("invalid namespace", target);
    read_ops(part, nops);
  }
  free(line);
}

/*
 * Header lines: `run <id> <stop|all> <nops> <target>` followed by nops operation lines,
 * `plan <id> <nparts>` followed by nparts runs (read_parts),
 * `read <id> <target>[ scope <item>...]` (read-scope.c), or `nftset <id> <target> <table> <set>`. A line that does not parse means the two sides disagree on the wire:
 * the helper stops rather than guess (the agent fails what is in flight and restarts it).
 */
static void read_requests(void) {
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) >= 0) {
    chomp(line);
    struct request *q = calloc(1, sizeof *q);
    if (q == NULL) die("out of memory");
    char mode[8], target[8200] = "node";
    int nops, nparts, used = 0;
    if (sscanf(line, "plan %llu %d", &q->id, &nparts) == 2 && nparts >= 0 && nparts <= MAX_PARTS) {
      q->kind = PLAN;
      read_parts(q, nparts);
    } else if (sscanf(line, "read %llu %8199s%n", &q->id, target, &used) == 2) {
      q->kind = READ;
      if (line[used] != '\0' && (strncmp(target, "pod:", 4) != 0 || read_scope_parse(line + used, &q->scope) < 0))
        refuse_line("cannot parse the scope of a read", line);
    } else if (sscanf(line, "nftset %llu %8199s %255s %255s", &q->id, target, q->table, q->set) == 4) {
      q->kind = NFT_SET;
    } else if (sscanf(line, "run %llu %7s %d %8199s", &q->id, mode, &nops, target) == 4 && nops >= 0 &&
               nops <= MAX_OPS && (strcmp(mode, "stop") == 0 || strcmp(mode, "all") == 0)) {
      q->kind = RUN;
      q->all = strcmp(mode, "all") == 0;
      read_ops(q, nops);
    } else {
      refuse_line("cannot parse request line", line);
    }
    if (parse_target(target, &q->path) < 0) refuse_line("invalid namespace", target);
    enqueue(q);
  }
  free(line);
}

/* The node's nfnetlink sockets stay open (nfnl-socket.c). A node namespace that cannot be opened
   now keeps none: each request then says why it cannot enter it. */
static void keep_nfnl_in_node_netns(void) {
  if (node_netns_path == NULL) {
    nfnl_keep_in(own_ns_fd);
    return;
  }
  char reason[MSG_MAX];
  int fd = open_netns(node_netns_path, reason, sizeof reason);
  if (fd < 0) return;
  nfnl_keep_in(fd);
  close(fd);
}

/* vpcnet's version (src/infra/version.ts; src/cli/versions.test.ts holds the two together). */
#define VPCNET_VERSION "0.1.0"

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("vpcnet-netlink " VPCNET_VERSION "\n");
    return 0;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--node-netns") == 0 && i + 1 < argc) {
      node_netns_path = argv[++i];
    } else if (strcmp(argv[i], "--no-strict-check") == 0) {
      dump_strict_check = false;
    } else {
      fprintf(stderr, "usage: vpcnet-netlink [--node-netns PATH] [--no-strict-check] | --version\n"
                      "(the agent's netlink helper: vpcnetd starts it, requests come on stdin)\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  /* An answer of a few hundred KiB (a node's, or a pod read refused at its bound) is mmapped and
     goes back to the kernel when freed. glibc raises this threshold as large blocks are freed, and
     then each of the workers' arenas keeps the largest answer it built. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  own_ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (own_ns_fd < 0) die("cannot open its own network namespace (/proc/thread-self/ns/net)");
  keep_nfnl_in_node_netns();
  pthread_t threads[WORKERS];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, WORKER_STACK);
  for (int i = 0; i < WORKERS; i++) {
    if (pthread_create(&threads[i], &attr, worker, NULL) != 0) die("cannot start worker threads");
  }
  read_requests();
  pthread_mutex_lock(&queue_lock);
  input_done = true;
  pthread_cond_broadcast(&queue_ready);
  pthread_mutex_unlock(&queue_lock);
  for (int i = 0; i < WORKERS; i++) pthread_join(threads[i], NULL);
  /* Deletions answered at their announcement may still wait for their ack: none is cut off. */
  link_del_wait_finishers();
  return 0;
}
