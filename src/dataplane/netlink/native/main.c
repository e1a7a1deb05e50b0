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
 * Files: main.c (requests, workers, namespaces), ops.c (one operation as rtnetlink, or for the SNAT
 * set as nfnetlink: nft-set.c), rtnl.c (the
 * socket and message builder), dump*.c (reads in `ip -d -j` shape), jbuf.c (the answer's text).
 *
 * Usage: vpcnet-netlink [--node-netns PATH]   (the node's namespace; default: the helper's own)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "dump.h"
#include "jbuf.h"
#include "nft-set.h"
#include "ops.h"
#include "rtnl.h"

/*
 * Workers mostly wait in the kernel, not on the CPU: deleting a veth waits ~15 ms for RCU after the
 * RTNL lock is released, and such waits overlap only across threads. With 4 workers, 50 concurrent
 * removals took 4x as long as 50 `ip` processes; a burst's worth of workers lets them overlap.
 */
#define WORKERS 32
/* Bounded use: message buffers of a few KiB; the receive buffer and answers are on the heap. */
#define WORKER_STACK (256 * 1024)
/* A sanity bound only (GC may remove a whole node's orphans in one run). */
#define MAX_OPS 1000000
#define MSG_MAX 512

/* Longest nftables table or set name (NFT_NAME_MAXLEN is 256 with its NUL). */
#define NFT_NAME 256
/* Enough for any node: a set element per pod address. */
#define MAX_SET_ELEMENTS 65536

enum request_kind { RUN, READ, NFT_SET };

struct request {
  struct request *next;
  enum request_kind kind;
  bool all;
  unsigned long long id;
  /* NULL: the node's namespace. */
  char *path;
  int nops;
  char **ops;
  /* NFT_SET: which set to list. */
  char table[NFT_NAME], set[NFT_NAME];
};

static const char *node_netns_path;
static int own_ns_fd = -1;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static struct request *queue_head, *queue_tail;
static bool input_done;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void die(const char *what) {
  fprintf(stderr, "vpcnet-netlink: %s\n", what);
  _exit(70);
}

/* One answer, one write under the lock: answers of concurrent workers never interleave. */
static void answer(struct jbuf *b) {
  if (b->oom) die("out of memory building an answer");
  jbuf_raw(b, "\n");
  pthread_mutex_lock(&out_lock);
  size_t off = 0;
  while (off < b->len) {
    ssize_t n = write(STDOUT_FILENO, b->data + off, b->len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("cannot write answers (the agent is gone)");
    off += (size_t)n;
  }
  pthread_mutex_unlock(&out_lock);
}

static void answer_unentered(unsigned long long id, const char *reason) {
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":false,\"reason\":", id);
  jbuf_str(&b, reason);
  jbuf_raw(&b, "}");
  answer(&b);
  jbuf_free(&b);
}

/* Opens a path that must name a network namespace; -1 with `reason` otherwise. */
static int open_netns(const char *path, char *reason, size_t len) {
  /* O_NONBLOCK: a FIFO at that path must be refused, not hold a worker forever. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(reason, len, "cannot open network namespace %s: %s", path, strerror(errno));
    return -1;
  }
  int type = ioctl(fd, NS_GET_NSTYPE);
  if (type != CLONE_NEWNET) {
    snprintf(reason, len, "%s is not a network namespace", path);
    close(fd);
    return -1;
  }
  return fd;
}

/* Moves this thread into `path` (NULL: stays home). -1 with `reason` when it cannot. */
static int enter(const char *path, char *reason, size_t len) {
  if (path == NULL) return 0;
  int fd = open_netns(path, reason, len);
  if (fd < 0) return -1;
  if (setns(fd, CLONE_NEWNET) < 0) {
    snprintf(reason, len, "cannot enter network namespace %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

static void leave(const char *path) {
  if (path == NULL) return;
  if (setns(own_ns_fd, CLONE_NEWNET) < 0) die("cannot return to its own network namespace");
}

/* The request's namespace: a pod's path, or the node's (NULL when that is the helper's own). */
static const char *target_of(const struct request *q) { return q->path != NULL ? q->path : node_netns_path; }

/*
 * In a removal ('all' mode) consecutive deletions of SNAT elements of one set go in one nf_tables
 * transaction (nft_set_remove): each transaction that deletes waits for an RCU grace period, so the
 * elements of a burst of DELs cost what one does. Returns how many operations from `from` it
 * removed; 0 when ops[from] starts no such run, or when the transaction failed (then each
 * operation runs alone and reports its own error).
 */
static int snat_removals(char **ops, int from, int nops) {
  char table[NFT_NAME], set[NFT_NAME], t[NFT_NAME], s[NFT_NAME], ip[INET_ADDRSTRLEN];
  if (sscanf(ops[from], "snatDel %255s %255s %15s", table, set, ip) != 3) return 0;
  int n = 0;
  while (from + n < nops && sscanf(ops[from + n], "snatDel %255s %255s %15s", t, s, ip) == 3 &&
         strcmp(t, table) == 0 && strcmp(s, set) == 0)
    n++;
  struct in_addr *ips = malloc((size_t)n * sizeof *ips);
  if (ips == NULL) die("out of memory");
  for (int i = 0; i < n; i++) {
    if (sscanf(ops[from + i], "snatDel %*s %*s %15s", ip) != 1 || inet_pton(AF_INET, ip, &ips[i]) != 1) {
      free(ips);
      return 0;
    }
  }
  int rc = nft_set_remove(table, set, ips, (size_t)n);
  free(ips);
  return rc == 0 ? n : 0;
}

static void run_request(struct request *q) {
  char reason[MSG_MAX];
  const char *target = target_of(q);
  /* A veth's peer goes to the node's namespace: the helper's own, or --node-netns. */
  int node_fd = own_ns_fd;
  if (node_netns_path != NULL) {
    node_fd = open_netns(node_netns_path, reason, sizeof reason);
    if (node_fd < 0) {
      answer_unentered(q->id, reason);
      return;
    }
  }
  if (enter(target, reason, sizeof reason) < 0) {
    if (node_fd != own_ns_fd) close(node_fd);
    answer_unentered(q->id, reason);
    return;
  }
  struct jbuf b;
  jbuf_init(&b);
  struct rtnl r;
  int rc = rtnl_open(&r);
  if (rc < 0) {
    snprintf(reason, sizeof reason, "cannot open rtnetlink in %s: %s", target ? target : "the node namespace",
             strerror(-rc));
    leave(target);
    if (node_fd != own_ns_fd) close(node_fd);
    answer_unentered(q->id, reason);
    return;
  }
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,\"failures\":[", q->id);
  int failures = 0;
  for (int i = 0; i < q->nops; i++) {
    char msg[MSG_MAX];
    if (q->all) {
      int done = snat_removals(q->ops, i, q->nops);
      if (done > 0) {
        i += done - 1;
        continue;
      }
    }
    if (run_op(&r, q->ops[i], node_fd, msg, sizeof msg) == 0) continue;
    jbuf_printf(&b, "%s{\"index\":%d,\"message\":", failures++ > 0 ? "," : "", i);
    jbuf_str(&b, msg);
    jbuf_raw(&b, "}");
    if (!q->all) break;
  }
  jbuf_raw(&b, "]}");
  rtnl_close(&r);
  leave(target);
  if (node_fd != own_ns_fd) close(node_fd);
  answer(&b);
  jbuf_free(&b);
}

static void read_request(struct request *q) {
  char reason[MSG_MAX];
  const char *target = target_of(q);
  if (enter(target, reason, sizeof reason) < 0) {
    answer_unentered(q->id, reason);
    return;
  }
  struct jbuf b;
  jbuf_init(&b);
  struct rtnl r;
  int rc = rtnl_open(&r);
  if (rc < 0) {
    leave(target);
    snprintf(reason, sizeof reason, "cannot open rtnetlink: %s", strerror(-rc));
    answer_unentered(q->id, reason);
    return;
  }
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,", q->id);
  char msg[MSG_MAX];
  if (dump_namespace(&r, &b, q->path != NULL, msg, sizeof msg) < 0) {
    jbuf_free(&b);
    jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,\"error\":", q->id);
    jbuf_str(&b, msg);
  }
  jbuf_raw(&b, "}");
  rtnl_close(&r);
  leave(target);
  answer(&b);
  jbuf_free(&b);
}

/* The elements of an nftables IPv4 set in the request's namespace: `"elements":[...]`, or null when
   the table or set does not exist (SNAT not set up, or external). */
static void nft_set_request(struct request *q) {
  char reason[MSG_MAX];
  const char *target = target_of(q);
  if (enter(target, reason, sizeof reason) < 0) {
    answer_unentered(q->id, reason);
    return;
  }
  struct in_addr *ips = malloc(MAX_SET_ELEMENTS * sizeof *ips);
  if (ips == NULL) die("out of memory");
  size_t n = 0;
  int rc = nft_set_list(q->table, q->set, ips, MAX_SET_ELEMENTS, &n);
  leave(target);
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,", q->id);
  if (rc == -ENOENT) {
    jbuf_raw(&b, "\"elements\":null}");
  } else if (rc < 0 || n > MAX_SET_ELEMENTS) {
    snprintf(reason, sizeof reason, "cannot list nftables set %.64s %.64s: %s", q->table, q->set,
             rc < 0 ? strerror(-rc) : "more elements than a node can have");
    jbuf_raw(&b, "\"error\":");
    jbuf_str(&b, reason);
    jbuf_raw(&b, "}");
  } else {
    jbuf_raw(&b, "\"elements\":[");
    for (size_t i = 0; i < n; i++) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &ips[i], text, sizeof text);
      jbuf_printf(&b, "%s\"%s\"", i > 0 ? "," : "", text);
    }
    jbuf_raw(&b, "]}");
  }
  free(ips);
  answer(&b);
  jbuf_free(&b);
}

static void free_request(struct request *q) {
  for (int i = 0; i < q->nops; i++) free(q->ops[i]);
  free(q->ops);
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
  for (size_t i = 0; i < n / 2; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      free(p);
      return -1;
    }
    p[i] = (char)(hi * 16 + lo);
  }
  p[n / 2] = '\0';
  *path = p;
  return 0;
}

static void chomp(char *line) {
  size_t n = strlen(line);
  if (n > 0 && line[n - 1] == '\n') line[n - 1] = '\0';
}

/*
 * Header lines: `run <id> <stop|all> <nops> <target>` followed by nops operation lines,
 * `read <id> <target>`, or `nftset <id> <target> <table> <set>`. A line that does not parse means the two sides disagree on the wire:
 * the helper stops rather than guess (the agent fails what is in flight and restarts it).
 */
static void read_requests(void) {
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) >= 0) {
    chomp(line);
    struct request *q = calloc(1, sizeof *q);
    if (q == NULL) die("out of memory");
    char mode[8], target[8200];
    int nops;
    if (sscanf(line, "read %llu %8199s", &q->id, target) == 2) {
      q->kind = READ;
    } else if (sscanf(line, "nftset %llu %8199s %255s %255s", &q->id, target, q->table, q->set) == 4) {
      q->kind = NFT_SET;
    } else if (sscanf(line, "run %llu %7s %d %8199s", &q->id, mode, &nops, target) == 4 && nops >= 0 &&
               nops <= MAX_OPS && (strcmp(mode, "stop") == 0 || strcmp(mode, "all") == 0)) {
      q->kind = RUN;
      q->all = strcmp(mode, "all") == 0;
      q->ops = calloc((size_t)nops + 1, sizeof *q->ops);
      if (q->ops == NULL) die("out of memory");
      for (int i = 0; i < nops; i++) {
        char *op = NULL;
        size_t opcap = 0;
        if (getline(&op, &opcap, stdin) < 0) die("input ended inside a request");
        chomp(op);
        q->ops[q->nops++] = op;
      }
    } else {
      fprintf(stderr, "vpcnet-netlink: cannot parse request line: %.200s\n", line);
      _exit(65);
    }
    if (parse_target(target, &q->path) < 0) {
      fprintf(stderr, "vpcnet-netlink: invalid namespace %.200s\n", target);
      _exit(65);
    }
    enqueue(q);
  }
  free(line);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--node-netns") == 0) {
    node_netns_path = argv[2];
  } else if (argc != 1) {
    fprintf(stderr, "usage: vpcnet-netlink [--node-netns PATH]\n");
    return 64;
  }
  signal(SIGPIPE, SIG_IGN);
  own_ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (own_ns_fd < 0) die("cannot open its own network namespace (/proc/thread-self/ns/net)");
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
  return 0;
}
